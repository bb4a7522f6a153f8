package near

import (
	"context"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/prefetch"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func newHub(t *testing.T, cfg Config) *Hub {
	t.Helper()
	h, err := New(cfg, prometheus.NewRegistry())
	require.NoError(t, err)
	return h
}

func obj(id string, v uint64) *graph.Object {
	return &graph.Object{ID: id, Version: v, Type: "T", Payload: []byte("0123456789")}
}

// kinds summarises events as "kind id vN".
func kinds(evs []Event) []string {
	var out []string
	for _, e := range evs {
		id, v := e.ID, e.Version
		if e.Object != nil {
			id, v = e.Object.ID, e.Object.Version
		}
		out = append(out, e.Kind.String()+" "+id+" v"+string(rune('0'+v)))
	}
	return out
}

func TestChangesReachOnlyTheSubscribersHoldingTheID(t *testing.T) {
	h := newHub(t, Config{})
	a, b := h.Subscribe(0, "a"), h.Subscribe(0, "b")
	defer h.Unsubscribe(a)
	defer h.Unsubscribe(b)
	h.Track(a.ID, []string{"x"})
	h.Track("no-such-subscriber", []string{"x"})
	h.Changed("x", 3, false)
	h.Changed("y", 1, false)
	assert.Equal(t, []string{"invalidation x v3"}, kinds(h.Take(a, 10)))
	assert.Empty(t, h.Take(b, 10))
	select {
	case <-a.Wake():
	default:
		t.Fatal("a queued event wakes the subscriber")
	}
}

func TestPushesAndInvalidationsKeepTheirOrderPerID(t *testing.T) {
	h := newHub(t, Config{})
	s := h.Subscribe(1<<20, "")
	defer h.Unsubscribe(s)
	h.predicted(nil, []*graph.Object{obj("x", 1), obj("y", 1)}, "expand")
	h.Changed("x", 2, false)
	h.predicted(nil, []*graph.Object{obj("x", 1)}, "expand") // older than the change: refused
	h.predicted(nil, []*graph.Object{obj("y", 1)}, "expand") // held already: not sent again
	h.Changed("z", 4, true)
	h.predicted(nil, []*graph.Object{obj("z", 4)}, "expand") // deleted at 4: refused
	assert.Equal(t, []string{"push x v1", "push y v1", "invalidation x v2"}, kinds(h.Take(s, 10)))
}

func TestPushesStayWithinTheBudgetAndNeedOne(t *testing.T) {
	h := newHub(t, Config{})
	small := h.Subscribe(2*obj("a", 1).Size(), "small")
	none := h.Subscribe(0, "none")
	defer h.Unsubscribe(small)
	defer h.Unsubscribe(none)
	h.predicted(nil, []*graph.Object{obj("a", 1), obj("b", 1), obj("c", 1)}, "fetch")
	assert.Len(t, h.Take(small, 10), 2)
	assert.Empty(t, h.Take(none, 10), "a subscriber without a budget gets invalidations only")
	assert.Equal(t, 1.0, testutil.ToFloat64(h.m.pushDropped.WithLabelValues("small")))
}

// TestQueuedPushesStayWithinBudgetAndQueueBytes: what is queued and not
// taken counts, not what one prediction offers: a subscriber that does not
// take its events is pushed no more than its budget, all of them together
// no more than QueueBytes, and what is taken, flushed or unsubscribed makes
// room again.
func TestQueuedPushesStayWithinBudgetAndQueueBytes(t *testing.T) {
	size := obj("a", 1).Size()
	hub := newHub(t, Config{QueueBytes: 3 * size})
	s := hub.Subscribe(2*size, "s")
	defer hub.Unsubscribe(s)
	for _, id := range []string{"a", "b", "c"} {
		hub.predicted(nil, []*graph.Object{obj(id, 1)}, "fetch")
	}
	assert.Equal(t, 1.0, testutil.ToFloat64(hub.m.pushDropped.WithLabelValues("s")), "c: over the budget, a and b not taken")

	big := hub.Subscribe(1<<62, "big")
	hub.predicted(nil, []*graph.Object{obj("d", 1), obj("e", 1)}, "fetch")
	assert.Equal(t, 1.0, testutil.ToFloat64(hub.m.pushDropped.WithLabelValues("big")), "e: over the hub's room")
	assert.Equal(t, float64(3*size), testutil.ToFloat64(hub.m.queued))

	assert.Equal(t, []string{"push a v1"}, kinds(hub.Take(s, 1)))
	assert.Equal(t, float64(2*size), testutil.ToFloat64(hub.m.queued), "taken: room again")
	hub.Unsubscribe(big)
	assert.Equal(t, float64(size), testutil.ToFloat64(hub.m.queued), "unsubscribed: room again")
	hub.Flush("test")
	assert.Zero(t, testutil.ToFloat64(hub.m.queued), "flushed: room again")
	hub.predicted(nil, []*graph.Object{obj("e", 1), obj("f", 1), obj("g", 1)}, "fetch")
	assert.Equal(t, []string{"flush  v0", "push e v1", "push f v1"}, kinds(hub.Take(s, 10)))
}

// TestTrackedIDsStayWithinHeldBytes: the ids all subscribers are tracked
// for stay within HeldBytes: a subscriber reading one more past it is sent
// a flush and tracked for that id alone; what a subscriber held makes
// room again when it goes.
func TestTrackedIDsStayWithinHeldBytes(t *testing.T) {
	const per = 1 + heldOverhead // a one-byte id
	h := newHub(t, Config{HeldBytes: 3 * per})
	s := h.Subscribe(0, "s")
	defer h.Unsubscribe(s)
	h.Track(s.ID, []string{"a", "b", "c"})
	assert.Empty(t, h.Take(s, 10))
	assert.Equal(t, float64(3*per), testutil.ToFloat64(h.m.held))
	h.Track(s.ID, []string{"d"})
	assert.Equal(t, []string{"flush  v0"}, kinds(h.Take(s, 10)), "past the bound: flushed")
	assert.Equal(t, float64(per), testutil.ToFloat64(h.m.held), "tracked for d alone")
	h.Changed("a", 2, false)
	assert.Empty(t, h.Take(s, 10), "a is no longer tracked")

	other := h.Subscribe(0, "other")
	h.Track(other.ID, []string{"e", "f"})
	assert.Equal(t, float64(3*per), testutil.ToFloat64(h.m.held))
	h.Unsubscribe(other)
	assert.Equal(t, float64(per), testutil.ToFloat64(h.m.held), "gone: room again")
}

func TestASubscriberThatFallsBehindIsDisconnectedNotWaitedFor(t *testing.T) {
	h := newHub(t, Config{QueueEvents: 4})
	s := h.Subscribe(1<<20, "slow")
	defer h.Unsubscribe(s)
	ids := []string{"a", "b", "c", "d", "e"}
	h.Track(s.ID, ids)
	h.predicted(nil, []*graph.Object{obj("p", 1), obj("q", 1), obj("r", 1), obj("s", 1)}, "fetch")
	assert.Equal(t, 1.0, testutil.ToFloat64(h.m.pushDropped.WithLabelValues("slow")), "pushes stop at three quarters of the queue")
	for _, id := range ids {
		h.Changed(id, 2, false) // never blocks
	}
	select {
	case <-s.Gone():
	default:
		t.Fatal("a full queue disconnects the subscriber")
	}
	assert.Contains(t, s.Reason(), "fell behind")
	assert.Empty(t, h.Take(s, 10))
	assert.Equal(t, 1.0, testutil.ToFloat64(h.m.disconnects.WithLabelValues("slow", "behind")))
}

func TestFlushSupersedesQueuedEventsAndForgetsHoldings(t *testing.T) {
	h := newHub(t, Config{})
	s := h.Subscribe(0, "")
	defer h.Unsubscribe(s)
	h.Track(s.ID, []string{"x"})
	h.Changed("x", 2, false)
	h.Flush("origin changed")
	h.Changed("x", 3, false)
	evs := h.Take(s, 10)
	require.Len(t, evs, 1)
	assert.Equal(t, KindFlush, evs[0].Kind)
	assert.Equal(t, "origin changed", evs[0].Reason)
}

func TestTrackingPastTheLimitFlushesAndStartsOver(t *testing.T) {
	h := newHub(t, Config{MaxHeld: 2})
	s := h.Subscribe(0, "")
	defer h.Unsubscribe(s)
	h.Track(s.ID, []string{"a", "b", "c"})
	h.Changed("a", 2, false)
	h.Changed("c", 2, false)
	assert.Equal(t, []string{"flush  v0", "invalidation c v2"}, kinds(h.Take(s, 10)))
}

func TestDroppedSendsAnUnversionedInvalidation(t *testing.T) {
	h := newHub(t, Config{})
	s := h.Subscribe(0, "")
	h.Track(s.ID, []string{"x"})
	h.Dropped("x")
	assert.Equal(t, []string{"invalidation x v0"}, kinds(h.Take(s, 10)))
	h.Unsubscribe(s)
	h.Unsubscribe(s)
	assert.Equal(t, 0.0, testutil.ToFloat64(h.m.subscribers))
}

func TestClientNamesInLabelsAreBounded(t *testing.T) {
	h := newHub(t, Config{})
	for i := range maxLabels + 3 {
		s := h.Subscribe(0, string(rune('a'+i)))
		h.Unsubscribe(s)
	}
	assert.Equal(t, "other", h.m.label("zz"))
	assert.Equal(t, "a", h.m.label("a"))
	assert.Equal(t, "unnamed", h.m.label(""))
}

func TestConfigIsValidated(t *testing.T) {
	for name, cfg := range map[string]Config{
		"queue":     {QueueEvents: -1},
		"held":      {MaxHeld: -1},
		"floors":    {Floors: -2},
		"expiries":  {MaxExpiries: -1},
		"heartbeat": {Heartbeat: -1},
		"max age":   {MaxAge: -1},
		"inv bytes": {InvalidationBytes: -1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(cfg, prometheus.NewRegistry())
			assert.Error(t, err)
		})
	}
}

func TestHeldObjectsArePushedAsPredictions(t *testing.T) {
	h := newHub(t, Config{})
	a := h.Subscribe(1<<20, "a")
	h.Unsubscribe(a)
	h.Unsubscribe(a) // twice: counted out once
	watcher := h.Subscribe(0, "watcher")
	defer h.Unsubscribe(watcher)
	ctx := context.Background()                              // no job's: for every subscriber
	h.Held(ctx, slices.Values([]*graph.Object{obj("x", 1)})) // nobody to push to
	b := h.Subscribe(1<<20, "b")
	defer h.Unsubscribe(b)
	h.Held(ctx, slices.Values([]*graph.Object{obj("y", 1), obj("z", 2)}))
	evs := h.Take(b, 10)
	assert.Equal(t, []string{"push y v1", "push z v2"}, kinds(evs), "x was offered before b subscribed")
	for _, e := range evs {
		assert.Equal(t, "held", e.Reason)
	}
	assert.Empty(t, h.Take(watcher, 10), "a subscriber without a budget is pushed nothing")
	h.Held(ctx, slices.Values([]*graph.Object{obj("y", 1)}))
	assert.Empty(t, h.Take(b, 10), "held by b already: not pushed again")
	h.Changed("y", 3, false)
	assert.Equal(t, []string{"invalidation y v3"}, kinds(h.Take(b, 10)), "a pushed id is tracked")
}

// A job's predictions go to the subscribers holding what it expands below:
// the application that read it (or was pushed it), not every application
// the sidecar serves.
func TestPredictionsGoToTheReadersOfWhatTheyAreBelow(t *testing.T) {
	h := newHub(t, Config{})
	a, b := h.Subscribe(1<<20, "a"), h.Subscribe(1<<20, "b")
	defer h.Unsubscribe(a)
	defer h.Unsubscribe(b)
	h.Track(a.ID, []string{"ra"})
	h.Track(b.ID, []string{"rb"})
	h.Held(prefetch.WithFrom(context.Background(), []string{"ra"}), slices.Values([]*graph.Object{obj("x", 1)}))
	h.Held(prefetch.WithFrom(context.Background(), []string{"nobody", "rb"}), slices.Values([]*graph.Object{obj("y", 1)}))
	h.Held(prefetch.WithFrom(context.Background(), []string{"nobody"}), slices.Values([]*graph.Object{obj("z", 1)}))
	h.Held(prefetch.WithFrom(context.Background(), []string{"ra", "rb"}), slices.Values([]*graph.Object{obj("w", 1)}))
	assert.Equal(t, []string{"push x v1", "push w v1"}, kinds(h.Take(a, 10)))
	assert.Equal(t, []string{"push y v1", "push w v1"}, kinds(h.Take(b, 10)))
	h.Held(prefetch.WithFrom(context.Background(), []string{"x"}), slices.Values([]*graph.Object{obj("x.1", 1)}))
	assert.Equal(t, []string{"push x.1 v1"}, kinds(h.Take(a, 10)), "what was pushed to a is a's to expand below")
	assert.Empty(t, h.Take(b, 10))
}
