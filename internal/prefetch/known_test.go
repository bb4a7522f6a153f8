package prefetch

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch/fetchtest"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// fetchedAgain counts the objects an origin sent by Expand or was asked for
// by BatchGet beyond the first time, and the distinct ones.
func fetchedAgain(o *fetchtest.Expander) (again, distinct int) {
	times := o.SentIDs()
	for _, ids := range o.AskedIDs() {
		for _, id := range ids {
			times[id]++
		}
	}
	for _, k := range times {
		distinct++
		again += k - 1
	}
	return again, distinct
}

// A held object below a level's held objects is named in known_ids and not
// sent again, and one Expand walks below the held objects of the level
// together with the rest: a1, held, is the sibling of x, fetched; a2, held
// below a1, is also x's child.
func TestExpandWalksThroughHeldObjects(t *testing.T) {
	objs := []*graph.Object{
		{ID: "a", Version: 1, Refs: []graph.Ref{{Field: "c", ID: "a1"}}},
		{ID: "a1", Version: 1, Refs: []graph.Ref{{Field: "c", ID: "a2"}}},
		{ID: "a2", Version: 1, Refs: []graph.Ref{{Field: "c", ID: "a3"}}},
		{ID: "a3", Version: 1},
		{ID: "b", Version: 1, Refs: []graph.Ref{{Field: "c", ID: "a1"}, {Field: "c", ID: "x"}}},
		{ID: "x", Version: 1, Refs: []graph.Ref{{Field: "c", ID: "a2"}, {Field: "c", ID: "y"}}},
		{ID: "y", Version: 1},
	}
	o := &fetchtest.Expander{Origin: newFakeOrigin(objs)}
	r := newRig(t, o, Config{Mode: ModeStatic}, Static{Depth: 3}, cache.Config{})
	for _, id := range []string{"a", "b"} {
		_, _, err := r.engine.Get(context.Background(), []string{id}, Hint{})
		require.NoError(t, err)
		r.engine.s.Idle()
	}
	again, distinct := fetchedAgain(o)
	assert.Equal(t, 0, again, "sent: %v", o.SentIDs())
	assert.Equal(t, len(objs), distinct)
	assert.Equal(t, 2, o.ExpandCalls(), "one Expand below each demanded object")
	for _, id := range []string{"x", "y"} {
		_, ok := r.cache.Peek(id)
		assert.True(t, ok, "%s prefetched", id)
	}
}

// On the origin's random dataset (shared children, cycles, dangling refs),
// 300 sequential Gets with static prefetching fetch less than half as many
// objects a second time as they would if the origin did not honour
// known_ids.
func TestKnownIDsSpareRedownloads(t *testing.T) {
	var objs []*graph.Object
	g := graph.RandomGraph{N: 300, RefsPerNode: 3, DanglingRate: 0.05, Seed: 7}
	require.NoError(t, g.Generate(func(o *graph.Object) error { objs = append(objs, o); return nil }))
	run := func(ignoreKnown bool) (again, distinct int) {
		o := &fetchtest.Expander{Origin: newFakeOrigin(objs), IgnoreKnown: ignoreKnown}
		r := newRig(t, o, Config{Mode: ModeStatic}, Static{Depth: 3, MaxObjects: 1000}, cache.Config{})
		for i := range g.N {
			_, _, err := r.engine.Get(context.Background(), []string{g.NodeID(i)}, Hint{})
			require.NoError(t, err)
			r.engine.s.Idle()
		}
		return fetchedAgain(o)
	}
	with, distinct := run(false)
	without, _ := run(true)
	t.Logf("fetched again: %d with known_ids, %d without; %d distinct", with, without, distinct)
	assert.Less(t, 2*with, without)
}
