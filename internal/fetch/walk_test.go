package fetch

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch/fetchtest"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// An id the walk's Expand is still bringing is left to it, not looked up
// in the cache: the origin sends it anyway (a cached object below one that
// is not cached is not among the known ids), and the walk counts it as its
// own fetch. Once the Expand is over, what it brought answers.
func TestWalkLeavesToItsExpandWhatItBrings(t *testing.T) {
	var objs []*graph.Object
	require.NoError(t, graph.TaskTrees{Roots: 1, Fanout: 2, Levels: 3}.Generate(func(o *graph.Object) error {
		objs = append(objs, o)
		return nil
	}))
	root := objs[0]
	fx := &fetchtest.Expander{Origin: fetchtest.NewOrigin(objs),
		Gate: map[int]chan struct{}{1: make(chan struct{})}, Paused: make(chan int, 1)}
	r := newRig(t, fx, Config{}, cache.Config{})
	child := fx.Objs[root.Refs[0].ID]
	r.c.AddDemand(child)

	w := &walk{f: r.f, status: map[string]Status{}}
	w.x = r.f.NewExpansion([]string{root.ID}, graph.Budget{Depth: 2}, false)
	done := make(chan error, 1)
	go func() { done <- w.x.Run(context.Background()) }()
	require.Equal(t, 1, <-fx.Paused, "the origin sent the root and holds its children")
	o, held := lockedHave(w, child.ID)
	assert.False(t, held, "left to the Expand, which is bringing it")
	assert.Nil(t, o)

	close(fx.Gate[1])
	require.NoError(t, <-done)
	o, held = lockedHave(w, child.ID)
	assert.True(t, held)
	assert.Equal(t, child.ID, o.ID)
	assert.Empty(t, w.status, "the walk's own fetch, not a cache hit")
	assert.Equal(t, 1, fx.Sent[child.ID], "the origin sent it")
}

// lockedHave is w.have as the walk calls it, with its Expand's lock held.
func lockedHave(w *walk, id string) (*graph.Object, bool) {
	w.x.mu.Lock()
	defer w.x.mu.Unlock()
	return w.have(id)
}

// A walk's Expand leaves what it brought in the prefetch tier, as demanded
// objects (cache.FillWalked): no main-tier Set for a one-off walk, and a
// second walk finds them as main-tier hits, not as speculation paid off.
func TestWalkLeavesItsObjectsForASecondRead(t *testing.T) {
	var objs []*graph.Object
	require.NoError(t, graph.TaskTrees{Roots: 1, Fanout: 2, Levels: 3}.Generate(func(o *graph.Object) error {
		objs = append(objs, o)
		return nil
	}))
	fx := &fetchtest.Expander{Origin: fetchtest.NewOrigin(objs)}
	r := newRig(t, fx, Config{}, cache.Config{MainBytes: 4 << 20})
	walk := func() map[Status]int {
		n := map[Status]int{}
		_, err := r.f.Walk(context.Background(), []string{objs[0].ID}, graph.Budget{Depth: 2}, 0, func(_ int, rs []Result) error {
			for _, res := range rs {
				n[res.Status]++
			}
			return nil
		})
		require.NoError(t, err)
		return n
	}
	assert.Equal(t, map[Status]int{StatusMiss: len(objs)}, walk())
	s := r.c.Stats()
	assert.Zero(t, s["main"].Objects, "no main-tier Set for a walk")
	assert.Equal(t, int64(len(objs)), s["prefetch"].Objects, "the objects its Expand brought, the root among them")
	unread, _ := r.c.Unread()
	assert.Zero(t, unread, "demanded, not speculation")

	assert.Equal(t, map[Status]int{StatusHit: len(objs)}, walk())
}
