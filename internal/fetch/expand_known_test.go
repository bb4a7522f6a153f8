package fetch

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch/fetchtest"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// walked is what the origin's traversal visits below roots with budget b.
func walked(objs map[string]*graph.Object, roots []string, b graph.Budget) map[string]bool {
	seen := map[string]bool{}
	t := graph.NewTraversal(roots, b)
	for !t.Done() {
		var found []*graph.Object
		for _, id := range t.Pending() {
			seen[id] = true
			if o := objs[id]; o != nil {
				found = append(found, o)
			}
		}
		t.Resolve(found)
	}
	return seen
}

// With part of the graph held, an expansion admits exactly the ids the
// origin's walk visits, held ones interleaved and max_objects binding:
// nothing the origin sends is dropped, nothing is fetched that the cache
// holds below a held object, and the stream is complete.
func TestExpansionFollowsKnownObjectsInTheOriginsOrder(t *testing.T) {
	var list []*graph.Object
	g := graph.RandomGraph{N: 200, RefsPerNode: 3, DanglingRate: 0.05, Seed: 3}
	require.NoError(t, g.Generate(func(o *graph.Object) error { list = append(list, o); return nil }))
	objs := map[string]*graph.Object{}
	for _, o := range list {
		objs[o.ID] = o
	}
	for _, maxObjects := range []int{0, 10, 40, 120} {
		for start := 0; start < 200; start += 37 {
			t.Run(fmt.Sprintf("max %d root %d", maxObjects, start), func(t *testing.T) {
				fx := &fetchtest.Expander{Origin: fetchtest.NewOrigin(list)}
				r := newRig(t, fx, Config{}, cache.Config{})
				var held []*graph.Object
				for i, o := range list {
					if i%3 != 0 { // two objects in three held
						held = append(held, o)
					}
				}
				r.f.fill(held, nil, toMain, r.c.Changes())
				roots := []string{g.NodeID(start), g.NodeID((start + 1) % 200)}
				b := graph.Budget{Depth: 4, MaxObjects: maxObjects}
				x := r.f.NewExpansion(roots, b, false)
				require.NotEmpty(t, x.known)
				require.NoError(t, x.Run(context.Background()))

				assert.Zero(t, x.dropped, "every object the origin sent was expected")
				for id := range fx.SentIDs() {
					assert.Nil(t, x.known[id], "%s was known, and sent", id)
				}
				want := walked(objs, roots, b)
				for id := range want {
					o, _ := x.ids.Get(id) // received, or said not to exist
					assert.True(t, o != nil || x.known[id] != nil || fx.Withhold[id], "%s visited by the origin, not accounted for", id)
				}
				x.ids.Recorded(func(id string, _ *graph.Object) {
					assert.True(t, want[id], "%s received but not in the walk", id)
				})
				assert.Zero(t, x.awaited())
				assert.Empty(t, x.claims)
			})
		}
	}
}

// An expansion of held roots whose subgraph, as far as the budget goes, is
// all held asks the origin nothing.
func TestExpansionOfWhatIsHeldAsksNothing(t *testing.T) {
	objs := fetchtest.Tree(t, 2, 3) // 7 objects
	fx := &fetchtest.Expander{Origin: fetchtest.NewOrigin(objs)}
	r := newRig(t, fx, Config{}, cache.Config{})
	r.f.fill(objs, nil, toMain, r.c.Changes())
	x := r.f.NewExpansion([]string{"task-0"}, graph.Budget{Depth: 5}, true)
	require.NoError(t, x.Run(context.Background()))
	assert.Zero(t, fx.ExpandCalls())
	assert.Len(t, x.known, len(objs))
	assert.Zero(t, x.awaited())
}

// limitedExpander is an Expander whose origin reports how many known_ids
// an Expand may carry (Describe's max_ids).
type limitedExpander struct {
	*fetchtest.Expander
	maxKnown int
}

func (l limitedExpander) MaxKnown() int { return l.maxKnown }

// The known_ids of an Expand stop at --batch-size (256 here), the least
// an origin takes, unless the origin said it takes more; then at what it
// said, up to maxKnownIDs.
func TestKnownIDsStopAtWhatTheOriginTakes(t *testing.T) {
	objs := fetchtest.Tree(t, 4, 6) // 1365 objects
	for _, tt := range []struct {
		name     string
		maxKnown int
		want     int
	}{
		{"not reported", 0, 256},
		{"fewer than the batch size", 100, 256},
		{"1000", 1000, 1000},
		{"more than there are", 10000, len(objs)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fx := limitedExpander{&fetchtest.Expander{Origin: fetchtest.NewOrigin(objs)}, tt.maxKnown}
			r := newRig(t, fx, Config{BatchSize: 256}, cache.Config{})
			r.f.fill(objs, nil, toMain, r.c.Changes())
			x := r.f.NewExpansion([]string{"task-0"}, graph.Budget{Depth: 6}, true)
			assert.Len(t, x.known, tt.want)
			require.NoError(t, x.Run(context.Background()))
			assert.Equal(t, len(objs)-tt.want, len(fx.SentIDs()), "what was not named was sent again")
		})
	}
}

// A speculative expansion's max_objects counts what it fetches: the held
// objects the origin walks through are added to the budget, so that a job
// whose roots are a level already held still brings its budget's worth. A
// demanded one (a GetGraph walk, which answers held objects too) counts
// them.
func TestSpeculationsBudgetIsWhatItFetches(t *testing.T) {
	objs := fetchtest.Tree(t, 4, 5) // 341 objects: 1, 4, 16, 64, 256
	for _, tt := range []struct {
		name        string
		speculative bool
		want        int
	}{
		{"speculative", true, 50},
		{"demanded", false, 50 - 21},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fx := &fetchtest.Expander{Origin: fetchtest.NewOrigin(objs)}
			r := newRig(t, fx, Config{}, cache.Config{})
			r.f.fill(objs[:21], nil, toMain, r.c.Changes()) // the top three levels
			x := r.f.NewExpansion([]string{"task-0"}, graph.Budget{Depth: 4, MaxObjects: 50}, tt.speculative)
			require.Len(t, x.known, 21)
			require.NoError(t, x.Run(context.Background()))
			assert.Len(t, fx.SentIDs(), tt.want)
			assert.Zero(t, x.dropped, "every object sent was expected")
		})
	}
}
