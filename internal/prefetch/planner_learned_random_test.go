package prefetch

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// Reads of objects drawn at random follow a ref of the object read before
// now and then by coincidence (the first unread ref of a list offered
// within the horizon); a follow in one list is not a pattern, and after
// hundreds of random reads nothing is likely enough to fetch (minLists).
// Without the rule, a few coincidental follows among a few dozen offers of
// a field, weighed against the prior, reached 1/8 (here "related", in 5
// of 30 such sequences of 600 reads; none with it) and every later read's
// first ref of that field was fetched.
func TestLearnedRandomReadsLearnNothing(t *testing.T) {
	g := graph.RandomGraph{N: 20000, RefsPerNode: 4, Seed: 1}
	var objs []*graph.Object
	require.NoError(t, g.Generate(func(o *graph.Object) error { objs = append(objs, o); return nil }))
	l := NewLearned(LearnedConfig{})
	rng := rand.New(rand.NewPCG(4, 2))
	followed := 0
	for range 600 {
		if len(l.Read([]*graph.Object{objs[rng.IntN(len(objs))]}, true, 1500*time.Microsecond)) > 0 {
			followed++
		}
	}
	require.Positive(t, followed, "a coincidence happened")
	assert.Empty(t, l.Followed(l.cfg.MinChance))
	for _, o := range objs[:200] {
		for i, p := range l.Chances(o, 0, 0, nil) {
			assert.Less(t, p, l.cfg.MinChance, "%s ref %d", o.ID, i)
		}
	}
}
