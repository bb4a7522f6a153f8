package prefetch

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/peer"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/metrics"
)

// readAs makes one demand of c through the rig, as a request on c's
// connection, and returns its status.
func readAs(t *testing.T, r *rig, c *Client, id string) Status {
	t.Helper()
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: ClientAddr{Client: c}})
	rs, _, err := r.engine.Get(ctx, []string{id}, Hint{})
	require.NoError(t, err)
	require.Len(t, rs, 1)
	return rs[0].Status
}

// When a client goes, its queued jobs are dropped; another client's stay
// and run.
func TestGoneClientsQueuedJobsAreDropped(t *testing.T) {
	fo := newFakeOrigin([]*graph.Object{node("busy", "busy.1"), node("busy.1"),
		node("p", "p.1"), node("p.1"), node("q", "q.1"), node("q.1")})
	fo.Block["busy.1"] = true
	r := newRig(t, fo, Config{Workers: 1}, Static{Depth: 1}, cache.Config{})
	a, b := NewClient(), NewClient()

	readAs(t, r, b, "busy")
	<-fo.Started // b's job holds the one worker at the origin
	readAs(t, r, a, "p")
	readAs(t, r, b, "q")
	r.engine.s.Gone(a)
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.PrefetchCancelled.WithLabelValues(metrics.CancelledClientGone)), "a's job, dropped at once")
	assert.Equal(t, 1, r.engine.s.jobs.len(), "b's job waits")

	close(fo.Release)
	idle(t, r)
	assert.Equal(t, -1, askedAt(fo, "p.1"), "a's job never ran")
	assert.NotEqual(t, -1, askedAt(fo, "q.1"), "b's did")
	assert.Zero(t, testutil.ToFloat64(r.m.PrefetchCancelled.WithLabelValues(metrics.CancelledOvertaken)), "nothing was overtaken")
	assert.Empty(t, r.engine.s.index.held, "the dropped job let go of its triggers")
}

// When a client goes, its running job is cancelled and its origin call, which
// no demand joined, cut: what it was fetching never reaches the cache.
func TestGoneClientsRunningJobIsCut(t *testing.T) {
	fo := newFakeOrigin([]*graph.Object{node("p", "p.1"), node("p.1")})
	fo.Block["p.1"] = true
	o := &endsOrigin{fakeOrigin: fo}
	r := newRig(t, o, Config{Workers: 1}, Static{Depth: 1}, cache.Config{})
	a := NewClient()

	readAs(t, r, a, "p")
	<-fo.Started // a's job is at the origin for p.1
	r.engine.s.Gone(a)
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.PrefetchCancelled.WithLabelValues(metrics.CancelledClientGone)))
	idle(t, r) // Release is never closed: only the cut call lets the job end
	_, held := r.cache.Peek("p.1")
	assert.False(t, held, "the cut prefetch brought nothing")
	require.Eventually(t, func() bool { return len(o.errs()) == 2 }, 10*time.Second, time.Millisecond)
	assert.ErrorIs(t, o.errs()[1], context.Canceled, "the speculative call's context was cancelled")
	assert.Empty(t, r.engine.s.index.held)
}

// A running job of a client that went keeps the origin call another
// client's demand joined: that demand waits for it and gets its object,
// with no second origin call.
func TestGoneClientsJobKeepsACallADemandJoined(t *testing.T) {
	fo := newFakeOrigin([]*graph.Object{node("p", "p.1"), node("p.1")})
	fo.Block["p.1"] = true
	o := &endsOrigin{fakeOrigin: fo}
	r := newRig(t, o, Config{Workers: 1}, Static{Depth: 1}, cache.Config{})
	a, b := NewClient(), NewClient()

	readAs(t, r, a, "p")
	<-fo.Started // a's job is at the origin for p.1
	joined := make(chan Status, 1)
	go func() { joined <- readAs(t, r, b, "p.1") }()
	require.Eventually(t, func() bool { return testutil.ToFloat64(r.m.Joined) == 1 }, 10*time.Second, time.Millisecond,
		"b's demand for p.1 joins a's prefetch")
	r.engine.s.Gone(a)
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.PrefetchCancelled.WithLabelValues(metrics.CancelledClientGone)), "a's job is cancelled all the same")

	close(fo.Release)
	assert.Equal(t, StatusJoined, <-joined)
	idle(t, r)
	assert.Equal(t, 1, countAsked(fo, "p.1"), "p.1 was asked once")
	for _, err := range o.errs() {
		assert.NoError(t, err, "no origin call's context ended")
	}
}

// A request of a client that has gone (its handler was still answering
// when the connection ended) queues nothing, and a job of its that was
// already on its way to the queue is dropped when a worker comes to it.
func TestGoneClientsLateJobsAreDropped(t *testing.T) {
	fo := newFakeOrigin([]*graph.Object{node("busy", "busy.1"), node("busy.1"),
		node("p", "p.1"), node("p.1"), node("q", "q.1"), node("q.1")})
	fo.Block["busy.1"] = true
	r := newRig(t, fo, Config{Workers: 1}, Static{Depth: 1}, cache.Config{})
	s := r.engine.s
	a, b := NewClient(), NewClient()

	readAs(t, r, b, "busy")
	<-fo.Started
	s.Gone(a)
	readAs(t, r, a, "p")
	assert.Zero(t, s.jobs.len(), "the gone client's request queued nothing")
	q := fo.Objs["q"]
	late := job{roots: []*graph.Object{q}, triggers: []*graph.Object{q}, budget: graph.Budget{Depth: 1}, client: a}
	s.index.hold(late.triggers)
	s.jobs.push(late) // as if queued just before Gone
	close(fo.Release)
	idle(t, r)
	assert.Equal(t, -1, askedAt(fo, "p.1"))
	assert.Equal(t, -1, askedAt(fo, "q.1"), "the late job was dropped, not run")
	assert.Equal(t, 2.0, testutil.ToFloat64(r.m.PrefetchCancelled.WithLabelValues(metrics.CancelledClientGone)), "the refused job and the late one")
	assert.Empty(t, s.index.held, "the late job let go of its triggers")
}
