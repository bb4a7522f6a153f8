package prefetch

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// A read whose job wants whole levels while another job's Expand is in
// flight leaves them to that job, which asks for them as soon as its own
// Expand is answered: they are not dropped. A reader of several trees
// breadth first depends on it: the jobs of its reads of one tree's upper
// levels all come while the first Expand is on its way, and nothing would
// ask for their levels below until the reader misses on them.
func TestWholeLevelsLeftToTheExpandInFlight(t *testing.T) {
	var objs []*graph.Object
	require.NoError(t, graph.TaskTrees{Roots: 2, Fanout: 3, Levels: 4, PayloadBytes: 16}.Generate(func(o *graph.Object) error {
		objs = append(objs, o)
		return nil
	}))
	fo := newFakeOrigin(objs)
	fx := &fakeExpander{Origin: fo, Gate: map[int]chan struct{}{1: make(chan struct{})}, Paused: make(chan int, 4)}
	rec := &fromRecorder{fakeExpander: fx}
	r := newRig(t, rec, Config{Mode: ModeAdaptive, Workers: 2}, eager{}, cache.Config{})
	s := r.engine.s
	get := func(id string) {
		_, _, err := r.engine.Get(context.Background(), []string{id}, Hint{})
		require.NoError(t, err)
	}
	get("task-0")
	require.Equal(t, 1, <-fx.Paused, "the first tree's Expand is under way")
	get("task-1") // another tree: its levels are not the ones in flight
	waitJobs(t, s, 1, "the second job ended while the first waits")
	close(fx.Gate[1])
	s.Idle()
	assert.Equal(t, 2, fx.ExpandCalls(), "the second tree's levels asked for after the first's")
	assert.Equal(t, [][]string{{"task-0"}, {"task-1"}}, rec.calls(), "each Expand for the job whose levels it brings")
	for _, o := range objs {
		_, held := r.cache.Peek(o.ID)
		assert.True(t, held, "%s held with no read below the roots", o.ID)
	}
	assert.Equal(t, 2, fo.Calls(), "the two demands only")
}

// fromRecorder records From of the context of every Expand.
type fromRecorder struct {
	*fakeExpander
	mu   sync.Mutex
	from [][]string
}

func (r *fromRecorder) Expand(ctx context.Context, roots []string, known []*graph.Object, b graph.Budget, fn func(int, []*graph.Object, []string) error) error {
	r.mu.Lock()
	r.from = append(r.from, From(ctx))
	r.mu.Unlock()
	return r.fakeExpander.Expand(ctx, roots, known, b, fn)
}

func (r *fromRecorder) calls() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.from)
}

func TestWholeGateMergesWhatWaits(t *testing.T) {
	var g wholeGate
	require.True(t, g.enter([]string{"a"}, []string{"ra"}, graph.Budget{Depth: 2, MaxObjects: 10, Fields: []string{"x"}}, 3))
	assert.False(t, g.enter([]string{"b", "c"}, []string{"rb"}, graph.Budget{Depth: 3, MaxObjects: 5, Fields: []string{"y"}}, 3))
	assert.False(t, g.enter([]string{"d", "e"}, []string{"rd"}, graph.Budget{Depth: 1, MaxObjects: 5}, 3), "over the limit: dropped")
	roots, from, b := g.next(1)
	assert.Equal(t, []string{"b"}, roots, "a batch at a time")
	assert.Equal(t, []string{"rb"}, from, "for the job that left them")
	roots, from, _ = g.next(5)
	assert.Equal(t, []string{"c"}, roots)
	assert.Equal(t, []string{"rb"}, from)
	assert.Equal(t, graph.Budget{Depth: 3, MaxObjects: 5, Fields: []string{"y"}}, b)
	assert.False(t, g.enter([]string{"f"}, []string{"rf"}, graph.Budget{Depth: 1, MaxObjects: 4, Fields: []string{"x"}}, 3), "still held")
	assert.False(t, g.enter([]string{"g"}, []string{"rg"}, graph.Budget{Depth: 2, MaxObjects: 6, Fields: []string{"y"}}, 3))
	roots, from, b = g.next(5)
	assert.Equal(t, []string{"f", "g"}, roots)
	assert.Equal(t, []string{"rf", "rg"}, from, "for both jobs, and no longer for the first")
	assert.Equal(t, graph.Budget{Depth: 2, MaxObjects: 10, Fields: []string{"x", "y"}}, b)
	roots, from, _ = g.next(5)
	assert.Empty(t, roots)
	assert.Empty(t, from)
	assert.True(t, g.enter(nil, nil, graph.Budget{}, 3), "open once nothing waits")
	assert.False(t, g.enter([]string{"h"}, []string{"rh"}, graph.Budget{Depth: 1}, 3))
	g.leave()
	roots, from, _ = g.next(5)
	assert.Empty(t, roots, "a failed holder forgets what waited")
	assert.Empty(t, from)
	assert.Equal(t, graph.Budget{Depth: 2}, mergeBudgets(graph.Budget{Depth: 1, MaxObjects: 3, Fields: []string{"x"}}, graph.Budget{Depth: 2}),
		"no cap and every field when either has none")
}
