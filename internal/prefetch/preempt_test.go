package prefetch

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/fetch/fetchtest"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/metrics"
)

// node is an object whose refs, in field "left" for the first and "right"
// for the others, point at refs.
func node(id string, refs ...string) *graph.Object {
	o := &graph.Object{ID: id, Version: 1, Type: "Node"}
	for i, r := range refs {
		f := "right"
		if i == 0 {
			f = "left"
		}
		o.Refs = append(o.Refs, graph.Ref{Field: f, ID: r})
	}
	return o
}

// read makes one demand through the rig and returns its status.
func read(t *testing.T, r *rig, id string) Status {
	t.Helper()
	res, err := get(t, r.engine, id)
	require.NoError(t, err)
	return res.Status
}

// askedAt returns the index of the first BatchGet that asked for id, -1 if
// none did.
func askedAt(o *fakeOrigin, id string) int {
	return slices.IndexFunc(o.AskedIDs(), func(ids []string) bool { return slices.Contains(ids, id) })
}

// idle waits for the scheduler to have nothing queued or running, failing
// the test (rather than hanging it) if it never gets there.
func idle(t *testing.T, r *rig) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		r.engine.s.Idle()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("speculation never finished")
	}
}

// A demand miss of a child of a queued job's trigger drops that job: the
// application got below the trigger first, and the job would only fetch the
// branches it passed by. Jobs it did not overtake stay queued, and the
// miss's own job runs ahead of them.
func TestDemandMissDropsQueuedJobItOvertook(t *testing.T) {
	fo := newFakeOrigin([]*graph.Object{
		node("busy", "busy.1"), node("busy.1"),
		node("p", "p.1", "p.2", "p.3"), node("p.1", "p.1.1"), node("p.2", "p.2.1"), node("p.3"),
		node("p.1.1"), node("p.2.1"),
		node("q", "q.1"), node("q.1"),
	})
	fo.Block["busy.1"] = true
	r := newRig(t, fo, Config{Workers: 1}, Static{Depth: 1}, cache.Config{})

	read(t, r, "busy")
	<-fo.Started    // the one worker is at the origin for busy's child
	read(t, r, "q") // its job waits: overtaken by nothing below
	read(t, r, "p") // its job waits to fetch p.1, p.2, p.3
	require.Equal(t, StatusMiss, read(t, r, "p.1"), "p.1 missed: p's job had not run")
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.PrefetchPreempted), "p's job dropped at once")

	close(fo.Release)
	idle(t, r)
	assert.Equal(t, -1, askedAt(fo, "p.2"), "p's dropped job never fetched the branches the application passed by")
	assert.Equal(t, -1, askedAt(fo, "p.3"))
	require.NotEqual(t, -1, askedAt(fo, "q.1"), "q's job was not overtaken: it ran")
	assert.Less(t, askedAt(fo, "p.1.1"), askedAt(fo, "q.1"), "the miss's job ran ahead of the older one")
	assert.Zero(t, testutil.ToFloat64(r.m.PrefetchCancelled.WithLabelValues(metrics.CancelledOvertaken)))
}

// A demand miss of a child of a running job's trigger cancels the job: its
// speculative origin call, which no demand joined, is cut, and what it was
// fetching never reaches the cache.
func TestDemandMissCancelsRunningJobItOvertook(t *testing.T) {
	fo := newFakeOrigin([]*graph.Object{node("p", "p.1", "p.2"), node("p.1"), node("p.2")})
	fo.Block["p.1"] = true
	// The job follows "left" only: p.1, not p.2.
	r := newRig(t, fo, Config{Workers: 1}, Static{Depth: 1, Fields: []string{"left"}}, cache.Config{})

	read(t, r, "p")
	require.Equal(t, []string{"p.1"}, <-fo.Started, "p's job is at the origin for p.1")
	require.Equal(t, StatusMiss, read(t, r, "p.2"), "the application took the branch the job did not")
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.PrefetchCancelled.WithLabelValues(metrics.CancelledOvertaken)))

	idle(t, r) // Release is never closed: only the cut call lets the job end
	_, held := r.cache.Peek("p.1")
	assert.False(t, held, "the cut prefetch brought nothing")
	assert.Zero(t, testutil.ToFloat64(r.m.PrefetchIssued))
	assert.Zero(t, testutil.ToFloat64(r.m.PrefetchPreempted))
}

// A demand that joined a speculative fetch in flight waits for it, and
// the job it belongs to being overtaken does not cut it: the demand gets
// the prefetch's object, with no second origin call.
func TestOvertakenJobKeepsFetchADemandJoined(t *testing.T) {
	fo := newFakeOrigin([]*graph.Object{node("p", "p.1", "p.2"), node("p.1"), node("p.2")})
	fo.Block["p.1"] = true
	o := &endsOrigin{fakeOrigin: fo}
	r := newRig(t, o, Config{Workers: 1}, Static{Depth: 1, Fields: []string{"left"}}, cache.Config{})

	read(t, r, "p")
	<-fo.Started // p's job is at the origin for p.1
	joined := make(chan Status)
	go func() {
		rs, _, err := r.engine.Get(context.Background(), []string{"p.1"}, Hint{})
		assert.NoError(t, err)
		assert.Len(t, rs, 1)
		joined <- rs[0].Status
	}()
	require.Eventually(t, func() bool { return testutil.ToFloat64(r.m.Joined) == 1 }, 10*time.Second, time.Millisecond,
		"the demand for p.1 joins the prefetch")
	require.Equal(t, StatusMiss, read(t, r, "p.2"))
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.PrefetchCancelled.WithLabelValues(metrics.CancelledOvertaken)), "the job is overtaken all the same")

	close(fo.Release)
	assert.Equal(t, StatusJoined, <-joined, "the joined demand got the prefetch's answer")
	idle(t, r)
	assert.Equal(t, 1, countAsked(fo, "p.1"), "p.1 was asked once: the prefetch was not cut and asked again")
	for _, err := range o.errs() {
		assert.NoError(t, err, "no origin call's context ended")
	}
}

// ends records, for each origin call, how its context had ended when the
// call returned (nil: it had not).
type ends struct {
	mu   sync.Mutex
	ends []error
}

func (e *ends) record(ctx context.Context) {
	e.mu.Lock()
	e.ends = append(e.ends, ctx.Err())
	e.mu.Unlock()
}

func (e *ends) errs() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.ends)
}

// endsOrigin records how each BatchGet's context had ended.
type endsOrigin struct {
	*fakeOrigin
	ends
}

func (o *endsOrigin) BatchGet(ctx context.Context, ids []string) ([]*graph.Object, []string, error) {
	found, missing, err := o.fakeOrigin.BatchGet(ctx, ids)
	o.record(ctx)
	return found, missing, err
}

// endsExpander records how each Expand's context had ended.
type endsExpander struct {
	*fakeExpander
	ends
}

func (o *endsExpander) Expand(ctx context.Context, roots []string, known []*graph.Object, b graph.Budget,
	fn func(int, []*graph.Object, []string) error) error {
	err := o.fakeExpander.Expand(ctx, roots, known, b, fn)
	o.record(ctx)
	return err
}

// An overtaken job's speculative Expand is cut like its BatchGets, unless
// a demand joined it: then it runs to its end, and the demand gets its
// object from it.
func TestOvertakenExpandIsCutUnlessADemandJoinedIt(t *testing.T) {
	for _, demand := range []bool{false, true} {
		t.Run(map[bool]string{false: "no demand", true: "a demand joined"}[demand], func(t *testing.T) {
			fo := newFakeOrigin([]*graph.Object{node("p", "p.1", "p.2"), node("p.1", "p.1.1"), node("p.1.1"), node("p.2")})
			gate := make(chan struct{})
			fx := &endsExpander{fakeExpander: &fakeExpander{Origin: fo,
				Gate: map[int]chan struct{}{0: gate}, Paused: make(chan int, 1)}}
			// Two levels along "left": one Expand below p, from p.1.
			r := newRig(t, fx, Config{Workers: 1}, Static{Depth: 2, Fields: []string{"left"}}, cache.Config{})

			read(t, r, "p")
			<-fx.Paused // p's job is at the origin: an Expand from p.1
			joined := make(chan Status, 1)
			if demand {
				go func() {
					rs, _, err := r.engine.Get(context.Background(), []string{"p.1"}, Hint{})
					assert.NoError(t, err)
					assert.Len(t, rs, 1)
					joined <- rs[0].Status
				}()
				require.Eventually(t, func() bool { return testutil.ToFloat64(r.m.Joined) == 1 }, 10*time.Second,
					time.Millisecond, "the demand for p.1 joins the Expand")
			}
			require.Equal(t, StatusMiss, read(t, r, "p.2"))
			assert.Equal(t, 1.0, testutil.ToFloat64(r.m.PrefetchCancelled.WithLabelValues(metrics.CancelledOvertaken)))
			if !demand {
				idle(t, r) // the gate never opens: only the cut Expand lets the job end
				_, held := r.cache.Peek("p.1")
				assert.False(t, held, "the cut Expand brought nothing")
				return
			}
			close(gate)
			assert.Equal(t, StatusJoined, <-joined)
			idle(t, r)
			_, held := r.cache.Peek("p.1.1")
			assert.True(t, held, "the Expand went on below p.1")
			assert.Equal(t, []error{nil}, fx.errs(), "the Expand's context never ended")
			assert.Equal(t, -1, askedAt(fo, "p.1"), "nobody asked for p.1 again")
		})
	}
}

func countAsked(o *fakeOrigin, id string) int {
	n := 0
	for _, ids := range o.AskedIDs() {
		if slices.Contains(ids, id) {
			n++
		}
	}
	return n
}

// A job read for several objects at once (a BatchGet) is overtaken only
// when a miss got below every one of them.
func TestOvertakeNeedsEveryTrigger(t *testing.T) {
	a, b := node("a", "a.1", "a.2"), node("b", "b.1")
	x := newTriggerIndex()
	x.hold([]*graph.Object{a, b})
	left, gone := overtake([]*graph.Object{a, b}, x.overtaken([]string{"a.1"}))
	assert.Equal(t, []*graph.Object{b}, left, "b's subtree was not entered")
	assert.Equal(t, []*graph.Object{a}, gone)
	left, gone = overtake(left, x.overtaken([]string{"b.1"}))
	assert.Empty(t, left)
	assert.Equal(t, []*graph.Object{b}, gone)
	left, gone = overtake(nil, x.overtaken([]string{"a.1"}))
	assert.Empty(t, left, "a job without triggers (a refresh) is never overtaken")
	assert.Empty(t, gone)
}

// Every way a job ends lets go of its triggers: run to its end, dropped
// from a full queue, overtaken queued or running. Otherwise the index
// would keep every object ever read.
func TestJobsLetGoOfTheirTriggers(t *testing.T) {
	fo := newFakeOrigin([]*graph.Object{
		node("busy", "busy.1", "busy.2"), node("busy.1"), node("busy.2"),
		node("p", "p.1", "p.2"), node("p.1"), node("p.2"),
		node("q", "q.1"), node("q.1"), node("r", "r.1"), node("r.1"),
	})
	fo.Block["busy.1"] = true
	// Jobs follow "left" only: a read of a "right" ref is a miss.
	r := newRig(t, fo, Config{Workers: 1, QueueSize: 2}, Static{Depth: 1, Fields: []string{"left"}}, cache.Config{})

	read(t, r, "busy")
	<-fo.Started    // busy's job runs, held at the origin
	read(t, r, "q") // queued
	read(t, r, "r") // queued
	read(t, r, "p") // queued: q's job is dropped from the full queue
	require.Equal(t, 1.0, testutil.ToFloat64(r.m.PrefetchDropped))
	require.Equal(t, StatusMiss, read(t, r, "p.2"), "overtakes p's queued job")
	require.Equal(t, 1.0, testutil.ToFloat64(r.m.PrefetchPreempted))
	require.Equal(t, StatusMiss, read(t, r, "busy.2"), "overtakes busy's running job")
	require.Equal(t, 1.0, testutil.ToFloat64(r.m.PrefetchCancelled.WithLabelValues(metrics.CancelledOvertaken)))
	idle(t, r) // the cut call ends busy's job; r's job runs to its end
	assert.Empty(t, r.engine.s.index.refer)
	assert.Empty(t, r.engine.s.index.held)
}

// BenchmarkMissAndSpeculate is the sidecar's CPU for one request and the
// speculation it schedules, origin aside (a fake one answers at once):
// what the scheduler's bookkeeping of jobs and fetches costs per request.
// Reads go through a tree of 21,845 objects breadth first, so most are
// prefetch hits whose job fetches the children; the cache is emptied after
// each pass.
func BenchmarkMissAndSpeculate(b *testing.B) {
	objs := fetchtest.Tree(b, 4, 8)
	r := newRigWith(b, newFakeOrigin(objs), Config{}, fetch.Config{}, Static{Depth: 1}, cache.Config{})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%len(objs) == 0 && i > 0 {
			r.cache.Clear()
		}
		if _, _, err := r.engine.Get(context.Background(), []string{objs[i%len(objs)].ID}, Hint{}); err != nil {
			b.Fatal(err)
		}
		r.engine.s.Idle()
	}
}

// A demand miss overtakes only the jobs queued before its request looked
// its ids up: the scheduler learns from a read after answering it, so the
// application's next request can miss before the read's job is queued, and
// that job, still to bring the read's other refs, is not behind it.
func TestDemandMissLeavesJobsQueuedAfterItBegan(t *testing.T) {
	p1 := node("p.1", "p.1.1")
	fo := newFakeOrigin([]*graph.Object{node("busy", "busy.1"), node("busy.1"), node("p", "p.1", "p.2"), p1, node("p.2"), node("p.1.1")})
	fo.Block["busy.1"] = true
	r := newRig(t, fo, Config{Workers: 1}, Static{Depth: 1}, cache.Config{})
	s := r.engine.s

	read(t, r, "busy")
	<-fo.Started // the one worker is at the origin for busy's child
	began := time.Now()
	read(t, r, "p") // its job waits to fetch p.1 and p.2
	miss := func(began time.Time) {
		s.After(context.Background(), &fetch.Answer{Results: []fetch.Result{{Object: p1, Status: fetch.StatusMiss}}, Began: began}, Hint{})
	}
	miss(began)
	assert.Zero(t, testutil.ToFloat64(r.m.PrefetchPreempted), "p's job was queued after the miss's request began")
	miss(time.Now())
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.PrefetchPreempted), "a miss that began after it overtakes it")
	close(fo.Release)
	idle(t, r)
}
