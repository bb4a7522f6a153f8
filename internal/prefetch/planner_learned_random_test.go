package prefetch

import (
	"fmt"
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

// Within the horizon an offer nobody follows is not counted yet, and a
// coincidental follow is counted at once: before quickFollow, one of them
// made its position's chance 1 for the rest of a session shorter than the
// horizon (W7's 200 random points: 2-3 objects fetched per object read).
// Now a field's follows must show a pattern (fieldStats.shown): at no point
// of these sequences is a field followed. Follows made soon after their
// offers in two lists, twice from one list, or at one read in a few, do
// show the field; one follow, or two long after their offers among dozens
// of reads, do not.
func TestLearnedCoincidenceWithinTheHorizonShowsNothing(t *testing.T) {
	g := graph.RandomGraph{N: 20000, RefsPerNode: 4, Seed: 1}
	var objs []*graph.Object
	require.NoError(t, g.Generate(func(o *graph.Object) error { objs = append(objs, o); return nil }))
	byID := make(map[string]*graph.Object, len(objs))
	for _, o := range objs {
		byID[o.ID] = o
	}
	coincidences := 0
	for seed := range uint64(40) {
		l := NewLearned(LearnedConfig{})
		rng := rand.New(rand.NewPCG(seed, 7))
		for i := range 200 {
			if len(l.Read([]*graph.Object{objs[rng.IntN(len(objs))]}, true, 1500*time.Microsecond)) > 0 {
				coincidences++
			}
			require.Empty(t, l.Followed(l.cfg.MinChance), "sequence %d, read %d", seed, i)
		}
	}
	require.Positive(t, coincidences, "some sequence read a ref offered before")

	// Objects from i on whose first two refs are of field and exist.
	pick := func(i int, field string) int {
		for ; ; i++ {
			if r := objs[i].Refs; len(r) >= 2 && r[0].Field == field && r[1].Field == field && byID[r[0].ID] != nil && byID[r[1].ID] != nil {
				return i
			}
		}
	}
	const field = "related"
	a, b := pick(0, field), pick(1000, field)
	read := func(l *Learned, o *graph.Object) { l.Read([]*graph.Object{o}, true, 1500*time.Microsecond) }
	// follow reads objs[k] and, after reads of others, the first of its refs.
	follow := func(l *Learned, k, after int) {
		read(l, objs[k])
		for j := range after {
			read(l, objs[5000+k+j])
		}
		read(l, byID[objs[k].Refs[0].ID])
	}

	long := NewLearned(LearnedConfig{})
	follow(long, a, 20)
	follow(long, b, 20)
	assert.Empty(t, long.Followed(long.cfg.MinChance), "two lists, each followed once, 21 requests after its offer")

	once := NewLearned(LearnedConfig{})
	follow(once, a, 0)
	assert.Empty(t, once.Followed(once.cfg.MinChance), "one list, followed once at the next request")

	soon := NewLearned(LearnedConfig{})
	follow(soon, a, 2)
	follow(soon, b, 2)
	assert.Equal(t, []string{field}, soon.Followed(soon.cfg.MinChance), "two lists, each followed soon after its offer")

	// A navigation that queues the pages it visits (Knafla's) follows each
	// page's one ref of a field long after reading the page, but at every
	// other read.
	often := NewLearned(LearnedConfig{})
	page := func(i int) *graph.Object {
		return &graph.Object{ID: fmt.Sprint("p", i), Type: "Page", Refs: []graph.Ref{{Field: "next", ID: fmt.Sprint("p", i+100)}}}
	}
	for i := range 10 {
		read(often, page(i))
	}
	for i := range 10 {
		read(often, page(i+100))
	}
	assert.Equal(t, []string{"next"}, often.Followed(often.cfg.MinChance), "ten follows in twenty reads, each ten after its offer")

	twice := NewLearned(LearnedConfig{})
	follow(twice, a, 20)
	read(twice, byID[objs[a].Refs[1].ID])
	assert.Equal(t, []string{field}, twice.Followed(twice.cfg.MinChance), "a list read from twice")
}

// What a field's follows show is the field's at every depth: a walk that
// descends depth first follows one list per depth, each once and at once,
// and shows its field followed after two of them, though no depth has
// seen two lists (W7's depth-first diamonds made 21–27 origin round trips
// instead of 12–14 while each depth had to show it on its own).
func TestLearnedDescentShowsItsFieldAtEveryDepth(t *testing.T) {
	node := func(id string, below ...string) *graph.Object {
		o := &graph.Object{ID: id, Type: "Node"}
		for _, b := range below {
			o.Refs = append(o.Refs, graph.Ref{Field: "down", ID: b})
		}
		return o
	}
	l := NewLearned(LearnedConfig{})
	root := node("r", "a0", "a1", "a2")
	l.Read([]*graph.Object{root}, true, time.Millisecond)
	l.Read([]*graph.Object{node("a0", "b0", "b1", "b2")}, true, time.Millisecond)
	assert.Zero(t, l.Chances(root, 0, 0, nil)[1], "one follow shows nothing")
	l.Read([]*graph.Object{node("b0", "c0", "c1", "c2")}, true, time.Millisecond)
	assert.Equal(t, 2, l.Depth("b0"), "b0 was read two levels below the root")
	assert.Positive(t, l.Chances(root, 0, 0, nil)[1], "the root's next branch, after follows at depths 0 and 1")
}
