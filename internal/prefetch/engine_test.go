package prefetch

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// walkByGet visits a tree object by object, as db4o activation does, and
// returns the status of every Get.
func walkByGet(t *testing.T, e *engine, root string) []Status {
	t.Helper()
	return walkByGetThinking(t, e, root, func() {})
}

// walkByGetThinking is walkByGet with think called after every Get.
func walkByGetThinking(t *testing.T, e *engine, root string, think func()) []Status {
	t.Helper()
	var statuses []Status
	queue := []string{root}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		rs, missing, err := e.Get(context.Background(), []string{id}, Hint{})
		require.NoError(t, err)
		require.Empty(t, missing, id)
		require.Len(t, rs, 1)
		statuses = append(statuses, rs[0].Status)
		think()
		for _, r := range rs[0].Object.Refs {
			queue = append(queue, r.ID)
		}
	}
	return statuses
}

func waitIssued(t *testing.T, r *rig, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return testutil.ToFloat64(r.m.PrefetchIssued) >= float64(n) },
		10*time.Second, time.Millisecond, "prefetch never delivered %d objects", n)
}

func TestWalkMakesOneOriginCallPerLevel(t *testing.T) {
	objs := tree(t, 3, 5) // 121 objects, 4 levels below the root
	tests := []struct {
		name        string
		expand      bool
		wantBatch   int
		wantExpands int
	}{
		{name: "level-batched BatchGet", wantBatch: 1 + 4},
		{name: "server-side Expand", expand: true, wantBatch: 1, wantExpands: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fo := newFakeOrigin(objs)
			var o fetch.Origin = fo
			fx := &fakeExpander{Origin: fo}
			if tt.expand {
				o = fx
			}
			r := newRig(t, o, Config{}, Static{Depth: 4, MaxObjects: 1000}, cache.Config{})
			_, _, err := r.engine.Get(context.Background(), []string{"task-0"}, Hint{})
			require.NoError(t, err)
			waitIssued(t, r, len(objs)-1)
			r.engine.s.Idle() // a batch is counted issued just before it is cached

			statuses := walkByGet(t, r.engine, "task-0")
			require.Len(t, statuses, len(objs))
			for i, s := range statuses {
				assert.Contains(t, []Status{StatusHit, StatusHitPrefetched}, s, "Get %d", i)
			}
			assert.Equal(t, tt.wantBatch, fo.Calls(), "BatchGet round trips")
			assert.Equal(t, tt.wantExpands, fx.ExpandCalls(), "Expand round trips")
			assert.Equal(t, float64(len(objs)-1), testutil.ToFloat64(r.m.PrefetchUsed))
		})
	}
}

func TestPrefetchOffMakesOneCallPerObject(t *testing.T) {
	objs := tree(t, 3, 3)
	fo := newFakeOrigin(objs)
	r := newRig(t, fo, Config{Mode: ModeOff}, Static{Depth: 4}, cache.Config{})
	statuses := walkByGet(t, r.engine, "task-0")
	assert.Len(t, statuses, len(objs))
	assert.Equal(t, len(objs), fo.Calls())
	assert.Zero(t, testutil.ToFloat64(r.m.PrefetchIssued))
}

func TestDemandJoinsPrefetchInFlight(t *testing.T) {
	objs := tree(t, 3, 2) // task-0 with children .1 .2 .3
	fo := newFakeOrigin(objs)
	fo.Block["task-0.1"] = true
	r := newRig(t, fo, Config{}, Static{Depth: 1}, cache.Config{})

	_, _, err := r.engine.Get(context.Background(), []string{"task-0"}, Hint{})
	require.NoError(t, err)
	asked := <-fo.Started // the prefetch of the children is now at the origin
	require.ElementsMatch(t, []string{"task-0.1", "task-0.2", "task-0.3"}, asked)

	done := make(chan []Result)
	go func() {
		rs, _, err := r.engine.Get(context.Background(), []string{"task-0.1"}, Hint{})
		assert.NoError(t, err)
		done <- rs
	}()
	// The demand must be waiting on the prefetch, not at the origin itself.
	require.Eventually(t, func() bool { return testutil.ToFloat64(r.m.Joined) == 1 }, 5*time.Second, time.Millisecond)
	close(fo.Release)
	rs := <-done
	require.Len(t, rs, 1)
	assert.Equal(t, StatusJoined, rs[0].Status)
	assert.Equal(t, 2, fo.Calls(), "root demand + one prefetch; the demand made none")
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.PrefetchLate))
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.PrefetchUsed))
}

func TestConcurrentDemandsCoalesce(t *testing.T) {
	objs := tree(t, 2, 1)
	fo := newFakeOrigin(objs)
	fo.Block["task-0"] = true
	r := newRig(t, fo, Config{Mode: ModeOff}, Static{}, cache.Config{})
	const n = 100
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			_, _, err := r.engine.Get(context.Background(), []string{"task-0"}, Hint{})
			errs <- err
		}()
	}
	<-fo.Started
	// Every other Get either joins the flight or, once it lands, hits.
	require.Eventually(t, func() bool { return testutil.ToFloat64(r.m.Joined) == n-1 }, 5*time.Second, time.Millisecond)
	close(fo.Release)
	for i := 0; i < n; i++ {
		require.NoError(t, <-errs)
	}
	assert.Equal(t, 1, fo.Calls())
}

func TestDemandDoesNotQueueBehindSpeculation(t *testing.T) {
	objs := append(tree(t, 3, 2), &graph.Object{ID: "other", Version: 1})
	fo := newFakeOrigin(objs)
	fo.Block["task-0.1"] = true
	r := newRig(t, fo, Config{Workers: 1}, Static{Depth: 1}, cache.Config{})
	_, _, err := r.engine.Get(context.Background(), []string{"task-0"}, Hint{})
	require.NoError(t, err)
	<-fo.Started // the only worker is busy with a stalled prefetch
	rs, _, err := r.engine.Get(context.Background(), []string{"other"}, Hint{Depth: new(int)})
	require.NoError(t, err)
	assert.Equal(t, StatusMiss, rs[0].Status)
	close(fo.Release)
}

func TestPrefetchFloodNeverEvictsDemanded(t *testing.T) {
	// 200 roots of 10 children each: every job fits the tier's cap, together
	// they bring ~40 times what the tier holds.
	const tier, children = 16 << 10, 10
	var objs, roots []*graph.Object
	for r := 0; r < 200; r++ {
		root := &graph.Object{ID: "r" + itoa(r), Version: 1}
		for i := 0; i < children; i++ {
			id := root.ID + "c" + itoa(i)
			root.Refs = append(root.Refs, graph.Ref{Field: "f", ID: id})
			objs = append(objs, &graph.Object{ID: id, Version: 1, Payload: make([]byte, 256)})
		}
		objs, roots = append(objs, root), append(roots, root)
	}
	var demanded []string
	for i := 0; i < 50; i++ {
		id := "d" + itoa(i)
		demanded = append(demanded, id)
		objs = append(objs, &graph.Object{ID: id, Version: 1, Payload: make([]byte, 256)})
	}
	var largest int64
	for _, o := range objs {
		largest = max(largest, o.Size())
	}
	// The cap is half the tier over the mean size, whatever order the
	// objects arrive in: at the largest size it must still hold a root's
	// children, or this would test the cap instead of the flood.
	require.GreaterOrEqual(t, tier/2/largest, int64(children))
	fo := newFakeOrigin(objs)
	r := newRigBatch(t, fo, Config{}, 100, Static{Depth: 1, MaxObjects: 5000},
		cache.Config{MainBytes: 64 << 20, PrefetchBytes: tier}) // room for ~40 prefetched
	_, _, err := r.engine.Get(context.Background(), demanded, Hint{Depth: new(int)})
	require.NoError(t, err)
	for _, root := range roots {
		_, _, err = r.engine.Get(context.Background(), []string{root.ID}, Hint{})
		require.NoError(t, err)
	}
	// Every job has run (none is dropped: the queue holds 1024), so the
	// count is final; waiting for 2000 alone raced the last job's wasted.
	r.engine.s.Idle()
	require.Equal(t, 2000.0, testutil.ToFloat64(r.m.PrefetchIssued))

	assert.Greater(t, testutil.ToFloat64(r.m.PrefetchWasted), 1000.0)
	callsBefore := fo.Calls()
	rs, missing, err := r.engine.Get(context.Background(), demanded, Hint{Depth: new(int)})
	require.NoError(t, err)
	require.Empty(t, missing)
	for _, res := range rs {
		assert.Equal(t, StatusHit, res.Status, res.Object.ID)
	}
	assert.Equal(t, callsBefore, fo.Calls(), "demanded objects were all still cached")
}

func TestSpeculationFitsHalfThePrefetchTier(t *testing.T) {
	var objs []*graph.Object
	require.NoError(t, graph.TaskTrees{Roots: 1, Fanout: 10, Levels: 4, PayloadBytes: 256}.Generate(func(o *graph.Object) error {
		objs = append(objs, o)
		return nil
	}))
	const tier = 16 << 10
	r := newRig(t, newFakeOrigin(objs), Config{}, Static{Depth: 3}, cache.Config{PrefetchBytes: tier})
	_, _, err := r.engine.Get(context.Background(), []string{objs[0].ID}, Hint{})
	require.NoError(t, err)

	// The root is all the engine has seen: its size is the mean. Unclamped,
	// depth 3 would bring 1110 objects, ~20 times the tier, evicting its own
	// first levels before a walk could reach them.
	want := int(tier / 2 / objs[0].Size())
	waitIssued(t, r, want)
	require.Eventually(t, func() bool { return testutil.ToFloat64(r.m.PrefetchClamped) == 1 },
		10*time.Second, time.Millisecond, "the job ends at the tier's cap and says so")
	r.engine.Close() // waits for the workers: nothing more arrives
	assert.Equal(t, float64(want), testutil.ToFloat64(r.m.PrefetchIssued), "the job's budget is what half the tier holds")
	assert.Zero(t, testutil.ToFloat64(r.m.PrefetchWasted), "nothing it brought was evicted unused")

	// With room for the whole tree the cap never binds, and nothing counts.
	// One worker: the second job, below "next", runs only once the tree's
	// job has ended, so when its object arrives the first job is done.
	next := &graph.Object{ID: "next", Refs: []graph.Ref{{Field: "f", ID: "after"}}}
	fo := newFakeOrigin(append(objs, next, &graph.Object{ID: "after"}))
	big := newRig(t, fo, Config{Workers: 1}, Static{Depth: 3}, cache.Config{PrefetchBytes: 64 << 20})
	_, _, err = big.engine.Get(context.Background(), []string{objs[0].ID}, Hint{})
	require.NoError(t, err)
	waitIssued(t, big, len(objs)-1)
	_, _, err = big.engine.Get(context.Background(), []string{"next"}, Hint{})
	require.NoError(t, err)
	waitIssued(t, big, len(objs))
	assert.Zero(t, testutil.ToFloat64(big.m.PrefetchClamped), "a job that fits is not counted as stopped by the cap")
}

func TestFullQueueDropsSpeculation(t *testing.T) {
	// x0..x9 each refer to a child the origin stalls on.
	var objs []*graph.Object
	fo := newFakeOrigin(nil)
	for i := 0; i < 10; i++ {
		child := "b" + itoa(i)
		objs = append(objs, &graph.Object{ID: "x" + itoa(i), Refs: []graph.Ref{{Field: "f", ID: child}}},
			&graph.Object{ID: child})
		fo.Block[child] = true
	}
	for _, o := range objs {
		fo.Objs[o.ID] = o
	}
	r := newRig(t, fo, Config{Workers: 1, QueueSize: 1}, Static{Depth: 1}, cache.Config{})
	_, _, err := r.engine.Get(context.Background(), []string{"x0"}, Hint{})
	require.NoError(t, err)
	<-fo.Started // the only worker is stalled on b0
	// One job fits the queue: each newer one pushes the older out, and none
	// blocks the demand that schedules it.
	for i := 1; i < 10; i++ {
		_, _, err := r.engine.Get(context.Background(), []string{"x" + itoa(i)}, Hint{})
		require.NoError(t, err)
	}
	assert.Equal(t, 8.0, testutil.ToFloat64(r.m.PrefetchDropped))
	close(fo.Release)
	waitIssued(t, r, 2)

	// The survivor is the newest job, the one nearest the application.
	asked := map[string]bool{}
	for _, ids := range fo.AskedIDs() {
		for _, id := range ids {
			asked[id] = true
		}
	}
	assert.True(t, asked["b9"], "the newest job ran")
	for i := 1; i < 9; i++ {
		assert.False(t, asked["b"+itoa(i)], "job x%d was dropped, yet b%d was fetched", i, i)
	}
}

// The queue is full by bytes too (Config.QueueBytes): however many jobs
// its slots would take, it holds jobs of at most that many bytes of
// objects, dropping the oldest (counted as a full queue's), so that what
// objects of the origin's a stalled worker keeps alive is bounded by the
// configuration, not by the objects' sizes.
func TestQueueFullByBytesDropsSpeculation(t *testing.T) {
	// x0..x9 each refer to a child the origin stalls on, and take 1000
	// bytes: two jobs fit in 2500.
	fo := newFakeOrigin(nil)
	for i := 0; i < 10; i++ {
		child := "b" + itoa(i)
		fo.Objs["x"+itoa(i)] = padded(t, &graph.Object{ID: "x" + itoa(i), Refs: []graph.Ref{{Field: "f", ID: child}}}, 1000)
		fo.Objs[child] = &graph.Object{ID: child}
		fo.Block[child] = true
	}
	r := newRig(t, fo, Config{Workers: 1, QueueBytes: 2500}, Static{Depth: 1}, cache.Config{})
	_, _, err := r.engine.Get(context.Background(), []string{"x0"}, Hint{})
	require.NoError(t, err)
	<-fo.Started // the only worker is stalled on b0; its job left the queue
	for i := 1; i < 10; i++ {
		_, _, err := r.engine.Get(context.Background(), []string{"x" + itoa(i)}, Hint{})
		require.NoError(t, err)
		jobs, _ := r.engine.s.QueuedBytes()
		assert.LessOrEqual(t, jobs, int64(2500), "after x%d", i)
	}
	assert.Equal(t, 2, r.engine.s.jobs.len(), "two jobs' bytes fit")
	assert.Equal(t, 7.0, testutil.ToFloat64(r.m.PrefetchDropped), "x1..x7's jobs were dropped, oldest first")
	close(fo.Release)
	idle(t, r)
	for i := 1; i < 10; i++ {
		assert.Equal(t, i >= 8, askedAt(fo, "b"+itoa(i)) >= 0, "b%d fetched: only the two newest jobs ran", i)
	}
	jobs, _ := r.engine.s.QueuedBytes()
	assert.Zero(t, jobs)
}

func TestExpandUnsupportedFallsBackOnce(t *testing.T) {
	objs := tree(t, 2, 4)
	fx := &fakeExpander{Origin: newFakeOrigin(objs), Unsupported: true}
	r := newRig(t, fx, Config{}, Static{Depth: 3}, cache.Config{})
	_, _, err := r.engine.Get(context.Background(), []string{"task-0"}, Hint{})
	require.NoError(t, err)
	waitIssued(t, r, len(objs)-1)
	assert.Equal(t, 1, fx.ExpandCalls(), "asked once, then remembered")
	assert.Equal(t, 1+3, fx.Calls(), "demand + one BatchGet per level")
}

func TestGraphStreamsBreadthFirst(t *testing.T) {
	objs := tree(t, 2, 4) // 15 objects
	for _, expand := range []bool{false, true} {
		t.Run(map[bool]string{false: "batch", true: "expand"}[expand], func(t *testing.T) {
			fo := newFakeOrigin(objs)
			var o fetch.Origin = fo
			fx := &fakeExpander{Origin: fo}
			if expand {
				o = fx
			}
			r := newRig(t, o, Config{Mode: ModeOff}, Static{}, cache.Config{})
			var got []string
			lastLevel := 0
			missing, err := r.engine.Graph(context.Background(), []string{"task-0", "nope"}, graph.Budget{Depth: 10},
				func(level int, rs []Result) error {
					assert.GreaterOrEqual(t, level, lastLevel)
					lastLevel = level
					for _, res := range rs {
						got = append(got, res.Object.ID)
						assert.Equal(t, level, res.Level)
					}
					return nil
				})
			require.NoError(t, err)
			assert.Equal(t, []string{"nope"}, missing)
			want := make([]string, len(objs))
			for i, o := range objs {
				want[i] = o.ID
			}
			assert.Equal(t, want, got, "exactly the graph, breadth-first")
			if expand {
				assert.Equal(t, 1, fx.ExpandCalls())
				assert.Equal(t, 0, fo.Calls())
			} else {
				assert.Equal(t, 4, fo.Calls(), "one BatchGet per level")
			}
			// A second walk is all hits.
			_, err = r.engine.Graph(context.Background(), []string{"task-0"}, graph.Budget{Depth: 10},
				func(_ int, rs []Result) error {
					for _, res := range rs {
						assert.Equal(t, StatusHit, res.Status)
					}
					return nil
				})
			require.NoError(t, err)
		})
	}
}

func TestCloseStopsHeavyPrefetch(t *testing.T) {
	objs := tree(t, 5, 5)
	fo := newFakeOrigin(objs)
	for _, o := range objs[1:] {
		fo.Block[o.ID] = true
	}
	r := newRigBatch(t, fo, Config{Workers: 4}, 2, Static{Depth: 4, MaxObjects: 1000}, cache.Config{})
	_, _, err := r.engine.Get(context.Background(), []string{"task-0"}, Hint{})
	require.NoError(t, err)
	<-fo.Started
	r.engine.Close() // the fetches are stalled at the origin: Close must cut them
	r.engine.Close() // idempotent
	assert.Zero(t, testutil.ToFloat64(r.m.PrefetchIssued), "nothing stalled was cached")
}

func itoa(i int) string { return fmtInt(i) }

func TestHintOnCachedObjectPrefetches(t *testing.T) {
	objs := tree(t, 3, 3)
	fo := newFakeOrigin(objs)
	r := newRig(t, fo, Config{}, Static{Depth: 0}, cache.Config{})
	_, _, err := r.engine.Get(context.Background(), []string{"task-0"}, Hint{})
	require.NoError(t, err)
	require.Equal(t, 1, fo.Calls(), "no prefetch configured")
	two := 2
	rs, _, err := r.engine.Get(context.Background(), []string{"task-0"}, Hint{Depth: &two})
	require.NoError(t, err)
	assert.Equal(t, StatusHit, rs[0].Status)
	waitIssued(t, r, len(objs)-1)
}

func TestDemandJoinsExpandInFlight(t *testing.T) {
	objs := tree(t, 2, 4) // task-0; .1 .2; .3-.6; .7-.14
	fo := newFakeOrigin(objs)
	// The speculative Expand runs from task-0's children: its level 2 is
	// .7-.14. It pauses there, and never sends .8.
	fx := &fakeExpander{Origin: fo, Gate: map[int]chan struct{}{2: make(chan struct{})},
		Paused: make(chan int, 1), Withhold: map[string]bool{"task-0.8": true}}
	r := newRig(t, fx, Config{}, Static{Depth: 3}, cache.Config{})
	_, _, err := r.engine.Get(context.Background(), []string{"task-0"}, Hint{})
	require.NoError(t, err)
	require.Equal(t, 2, <-fx.Paused)

	rs, _, err := r.engine.Get(context.Background(), []string{"task-0.4"}, Hint{})
	require.NoError(t, err)
	assert.Equal(t, StatusHitPrefetched, rs[0].Status, "a level already received is cached")

	done := make(chan map[string]Status, 2)
	for _, id := range []string{"task-0.7", "task-0.8"} {
		go func() {
			rs, missing, err := r.engine.Get(context.Background(), []string{id}, Hint{})
			assert.NoError(t, err)
			assert.Empty(t, missing)
			got := map[string]Status{}
			for _, r := range rs {
				got[r.Object.ID] = r.Status
			}
			done <- got
		}()
	}
	// Both demands wait on the Expand: its next level is registered in flight.
	require.Eventually(t, func() bool { return testutil.ToFloat64(r.m.Joined) == 2 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, 1, fo.Calls(), "only the root's demand went to the origin so far")
	close(fx.Gate[2])
	got := map[string]Status{}
	for range 2 {
		for id, s := range <-done {
			got[id] = s
		}
	}
	assert.Equal(t, StatusJoined, got["task-0.7"], ".7 came with the Expand")
	// .8 was not sent: its demand fetches it, unless the prefetch planning on
	// below the Expand claimed it first; then the demand joins that fetch.
	// Either way .8 is fetched once.
	assert.Contains(t, []Status{StatusMiss, StatusJoined}, got["task-0.8"])
	assert.Len(t, got, 2)
	assert.Equal(t, 2, fo.Calls(), "the root, then .8 alone")
	assert.Equal(t, [][]string{{"task-0"}, {"task-0.8"}}, fo.AskedIDs())
	assert.Equal(t, 1, fx.ExpandCalls())
}

func TestGraphStreamsExpandLevelsAsTheyArrive(t *testing.T) {
	objs := tree(t, 2, 4)
	fo := newFakeOrigin(objs)
	fx := &fakeExpander{Origin: fo, Gate: map[int]chan struct{}{2: make(chan struct{})}, Paused: make(chan int, 1)}
	r := newRig(t, fx, Config{Mode: ModeOff}, Static{}, cache.Config{})

	emitted := make(chan int, 8)
	var got []string
	result := make(chan error, 1)
	go func() {
		_, err := r.engine.Graph(context.Background(), []string{"task-0"}, graph.Budget{Depth: 10},
			func(level int, rs []Result) error {
				for _, res := range rs {
					got = append(got, res.Object.ID)
					assert.Equal(t, StatusMiss, res.Status, res.Object.ID)
				}
				emitted <- level
				return nil
			})
		result <- err
	}()
	require.Equal(t, 2, <-fx.Paused)
	// The origin has sent levels 0 and 1 and holds level 2: both must reach
	// the client now, not when the Expand ends.
	for want := range 2 {
		select {
		case level := <-emitted:
			require.Equal(t, want, level)
		case <-time.After(10 * time.Second):
			t.Fatalf("level %d not emitted while the Expand is still running", want)
		}
	}
	// A Get for an id of the held level joins the walk's Expand.
	joined := make(chan Status, 1)
	go func() {
		rs, _, err := r.engine.Get(context.Background(), []string{"task-0.5"}, Hint{})
		assert.NoError(t, err)
		joined <- rs[0].Status
	}()
	require.Eventually(t, func() bool { return testutil.ToFloat64(r.m.Joined) == 1 }, 5*time.Second, time.Millisecond)
	close(fx.Gate[2])
	require.NoError(t, <-result)
	assert.Equal(t, StatusJoined, <-joined)
	assert.Equal(t, []int{2, 3}, []int{<-emitted, <-emitted})
	want := make([]string, len(objs))
	for i, o := range objs {
		want[i] = o.ID
	}
	assert.Equal(t, want, got, "exactly the graph, breadth-first")
	assert.Equal(t, 0, fo.Calls(), "one Expand, no BatchGet")
	assert.Equal(t, 1, fx.ExpandCalls())
}
