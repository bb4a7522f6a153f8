package near

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// expireAt runs the expiry sweep as if the clock read at.
func expireAt(h *Hub, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.expireLocked(at.UnixNano())
}

func TestHoldersAreToldWhenTheSidecarsCopyReachesItsTTL(t *testing.T) {
	const ttl = time.Hour
	h := newHub(t, Config{MaxAge: ttl})
	defer h.Close()
	a, b := h.Subscribe(0, "a"), h.Subscribe(0, "b")
	defer h.Unsubscribe(a)
	defer h.Unsubscribe(b)
	h.Track(a.ID, []string{"x", "y"})
	start := time.Now()
	h.fetched([]*graph.Object{obj("x", 1)})
	time.Sleep(time.Millisecond) // so that y and z expire after x
	h.fetched([]*graph.Object{obj("y", 1), obj("z", 1)})

	expireAt(h, start.Add(ttl-time.Millisecond))
	assert.Empty(t, h.Take(a, 10), "fresh for its TTL")
	expireAt(h, time.Unix(0, h.exp.queue[0].at))
	assert.Equal(t, []string{"invalidation x v0"}, kinds(h.Take(a, 10)), "x's TTL ended; y was fetched later")
	assert.Empty(t, h.Take(b, 10), "b holds nothing")
	expireAt(h, time.Now().Add(ttl))
	assert.Equal(t, []string{"invalidation y v0"}, kinds(h.Take(a, 10)), "z is held by no one")
	assert.Equal(t, 2.0, testutil.ToFloat64(h.m.expired.WithLabelValues("a")))

	h.fetched([]*graph.Object{obj("x", 1)})
	expireAt(h, time.Now().Add(ttl))
	assert.Empty(t, h.Take(a, 10), "a stopped holding x when told to drop it")
}

func TestExpiryFollowsTheClock(t *testing.T) {
	h := newHub(t, Config{MaxAge: 20 * time.Millisecond})
	defer h.Close()
	s := h.Subscribe(0, "")
	defer h.Unsubscribe(s)
	h.Track(s.ID, []string{"a", "b"})
	o := h.Fetching(fakeOrigin{})
	_, _, err := o.BatchGet(context.Background(), []string{"a"})
	require.NoError(t, err)
	time.Sleep(5 * time.Millisecond) // b is due after a: the timer must be armed again for it
	require.NoError(t, o.Expand(context.Background(), []string{"b"}, nil, graph.Budget{}, func(int, []*graph.Object, []string) error { return nil }))
	var got []string
	require.Eventually(t, func() bool {
		got = append(got, kinds(h.Take(s, 10))...)
		return len(got) == 2
	}, 10*time.Second, time.Millisecond, "both fetches expire, by the hub's own timer")
	assert.Equal(t, []string{"invalidation a v0", "invalidation b v0"}, got)
}

func TestNoExpiriesWithoutATTLOrAfterClose(t *testing.T) {
	h := newHub(t, Config{})
	s := h.Subscribe(0, "")
	h.Track(s.ID, []string{"x"})
	h.fetched([]*graph.Object{obj("x", 1)})
	assert.Empty(t, h.exp.queue, "no TTL: nothing to expire")
	h.Close()

	h = newHub(t, Config{MaxAge: time.Hour})
	h.fetched([]*graph.Object{obj("x", 1)})
	require.NotNil(t, h.exp.timer)
	h.Close()
	assert.Nil(t, h.exp.timer, "Close stops the timer")
	h.fetched([]*graph.Object{obj("x", 1)})
	assert.Empty(t, h.exp.queue)
}

func TestPastMaxExpiriesTheOldestFetchExpiresEarly(t *testing.T) {
	h := newHub(t, Config{MaxAge: time.Hour, MaxExpiries: 2})
	defer h.Close()
	s := h.Subscribe(0, "")
	defer h.Unsubscribe(s)
	h.Track(s.ID, []string{"a", "b", "c"})
	h.fetched([]*graph.Object{obj("a", 1), obj("b", 1)})
	assert.Empty(t, h.Take(s, 10))
	h.fetched([]*graph.Object{obj("c", 1)})
	assert.Equal(t, []string{"invalidation a v0"}, kinds(h.Take(s, 10)),
		"the memory bound drops a's copy early rather than forget when it expires")
	assert.Len(t, h.exp.queue[h.exp.head:], 2)
}
