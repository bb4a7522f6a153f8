package prefetch

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/metrics"
	"github.com/lookahead-dev/lookahead/internal/metrics/wire"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/origintest"
	"github.com/lookahead-dev/lookahead/internal/resilience"
)

// renamed is objs with every id and ref under prefix: another tree.
func renamed(objs []*graph.Object, prefix string) []*graph.Object {
	out := make([]*graph.Object, len(objs))
	for i, o := range objs {
		c := *o
		c.ID = prefix + o.ID
		c.Refs = make([]graph.Ref, len(o.Refs))
		for j, r := range o.Refs {
			c.Refs[j] = graph.Ref{Field: r.Field, ID: prefix + r.ID}
		}
		out[i] = &c
	}
	return out
}

// A shedding origin backs speculation off: the window closes, no request
// fails, the breaker stays closed and no round trip counts as failed; once
// the origin stops shedding, speculation opens the window again. Over gRPC,
// with the sidecar's origin client.
func TestShedSpeculationBacksOffWithoutFailing(t *testing.T) {
	objs := tree(t, 3, 5)
	o := origintest.New(slices.Concat(objs, renamed(objs, "b-"), renamed(objs, "c-"))...)
	o.Misbehave(origintest.Misbehaviour{ShedSpeculative: true})

	sm := metrics.New(prometheus.NewRegistry())
	win := NewWindow(4, wire.Prefetch(sm))
	// Only speculation's round trips reach the window: how fast demand is
	// answered here depends on the machine, and must not move it.
	speculation := func(rt origin.RoundTrip) {
		if rt.Speculative {
			win.Observe(rt)
		}
	}
	oc, err := origin.New(o.Start(t), origin.Config{Observe: speculation}, metrics.New(prometheus.NewRegistry()))
	require.NoError(t, err)
	// Depth 1: every object read makes one speculative BatchGet for its
	// children (the origin's Expand is not used for a single level).
	r := newRigWith(t, oc, Config{Window: win}, fetch.Config{Speculative: origin.Speculative}, Static{Depth: 1, MaxObjects: 100}, cache.Config{})

	// Without waiting for speculation, demands join speculative fetches
	// that are then shed: they fetch again, and every Get succeeds.
	walkByGet(t, r.engine, "c-task-0")
	r.engine.s.Idle()
	win.mu.Lock()
	win.set(4) // open again: the 40 sheds below close it from 4, hold-offs included
	win.mu.Unlock()

	statuses := walkByGetThinking(t, r.engine, "task-0", r.engine.s.Idle)
	for i, s := range statuses {
		require.Contains(t, []Status{StatusMiss, StatusJoined}, s, "Get %d: nothing speculated can have landed", i)
	}
	assert.GreaterOrEqual(t, testutil.ToFloat64(sm.PrefetchShed), 40.0, "a shed BatchGet below each of the 40 inner objects")
	assert.Equal(t, 1, win.Limit(), "the window closed to one call")
	assert.Equal(t, 1.0, testutil.ToFloat64(sm.PrefetchWindow))
	assert.Equal(t, resilience.StateClosed, oc.BreakerState(), "a shed is no failure of the origin")
	assert.Zero(t, oc.Calls().Failed, "no round trip counted failed")

	o.Misbehave(origintest.Misbehaviour{})
	statuses = walkByGetThinking(t, r.engine, "b-task-0", r.engine.s.Idle)
	assert.Contains(t, statuses, fetch.StatusHitPrefetched, "speculation lands again")
	assert.Equal(t, 4, win.Limit(), "answered speculation opened the window again")
}

// The scheduler starts no more speculative origin calls than the window
// allows, and starts the others as slots free.
func TestSpeculationKeepsWithinTheWindow(t *testing.T) {
	objs := tree(t, 3, 2) // a root and its 3 children
	fo := newFakeOrigin(objs)
	win := NewWindow(4, nil)
	win.mu.Lock()
	win.set(1)
	win.mu.Unlock()
	var children []string
	for _, r := range objs[0].Refs {
		children = append(children, r.ID)
		fo.Block[r.ID] = true
	}
	// One id per batch: the root's children make three speculative calls.
	r := newRigBatch(t, fo, Config{Window: win}, 1, Static{Depth: 1, MaxObjects: 10}, cache.Config{})
	_, _, err := r.engine.Get(context.Background(), []string{objs[0].ID}, Hint{})
	require.NoError(t, err)

	<-fo.Started
	select {
	case ids := <-fo.Started:
		t.Fatalf("%v started while the window allows one speculative call, and one is in flight", ids)
	case <-time.After(100 * time.Millisecond): // nothing may come; this only bounds the wait
	}
	for i := range children {
		fo.Release <- struct{}{}
		if i < len(children)-1 {
			<-fo.Started // the next call starts once the slot is free
		}
	}
	r.engine.s.Idle()
	rs, _, err := r.engine.Get(context.Background(), children, Hint{})
	require.NoError(t, err)
	for _, res := range rs {
		assert.Equal(t, StatusHitPrefetched, res.Status, res.Object.ID)
	}
}

// A speculative Expand takes a window slot too, before it claims its ids.
func TestSpeculativeExpandsKeepWithinTheWindow(t *testing.T) {
	a := tree(t, 3, 3)
	b := renamed(a, "b-")
	fo := newFakeOrigin(slices.Concat(a, b))
	gate := make(chan struct{})
	fx := &fakeExpander{Origin: fo, Gate: map[int]chan struct{}{0: gate}, Paused: make(chan int, 8)}
	win := NewWindow(4, nil)
	win.mu.Lock()
	win.set(1)
	win.mu.Unlock()
	r := newRig(t, fx, Config{Window: win}, Static{Depth: 2, MaxObjects: 100}, cache.Config{})
	for _, root := range []string{a[0].ID, b[0].ID} {
		_, _, err := r.engine.Get(context.Background(), []string{root}, Hint{})
		require.NoError(t, err)
	}

	<-fx.Paused // one Expand holds the only slot
	select {
	case <-fx.Paused:
		t.Fatal("a second speculative Expand started while the window allows one")
	case <-time.After(100 * time.Millisecond): // nothing may come; this only bounds the wait
	}
	close(gate)
	r.engine.s.Idle()
	assert.Equal(t, 2, fx.ExpandCalls())
	for _, tr := range [][]*graph.Object{a, b} {
		rs, _, err := r.engine.Get(context.Background(), []string{tr[1].ID, tr[len(tr)-1].ID}, Hint{})
		require.NoError(t, err)
		for _, res := range rs {
			assert.Equal(t, StatusHitPrefetched, res.Status, res.Object.ID)
		}
	}
}
