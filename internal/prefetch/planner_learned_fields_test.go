package prefetch

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// manyFields returns an object with n refs, each of a field of its own (a
// map's keys, or a hostile origin's object).
func manyFields(id string, n int) *graph.Object {
	o := &graph.Object{ID: id, Version: 1, Type: "Map"}
	for i := range n {
		o.Refs = append(o.Refs, graph.Ref{Field: fmt.Sprint("k", i), ID: fmt.Sprint(id, ".", i)})
	}
	return o
}

// An object whose refs have thousands of fields costs the planner its
// first maxLists of them, not a scan of its fields for every ref: only
// their refs are offered, and only theirs can have a chance.
func TestLearnedConsidersAnObjectsFirstLists(t *testing.T) {
	o := manyFields("m", 20000)
	l := NewLearned(LearnedConfig{})
	for range 3 { // read, and its first field's list followed, three times over
		l.Read([]*graph.Object{o}, false, 0)
		l.Read([]*graph.Object{node("m.0")}, false, 0)
		l.Read([]*graph.Object{node("x")}, false, 0)
	}
	lists, offered := l.listsOf(o)
	assert.Len(t, lists, maxLists)
	assert.Equal(t, maxLists, offered)
	assert.LessOrEqual(t, len(l.offers), maxLists)
	for id := range l.offers {
		var k int
		_, err := fmt.Sscanf(id, "m.%d", &k)
		require.NoError(t, err)
		assert.Less(t, k, maxLists, "%s offered, of a field past the first %d", id, maxLists)
	}
	c := l.Chances(o, 0, 0, nil)
	require.Len(t, c, len(o.Refs))
	assert.Positive(t, c[0], "the field followed")
	for k := maxLists; k < len(c); k++ {
		if c[k] != 0 {
			t.Fatalf("ref %d, of a field past the first %d, has chance %v", k, maxLists, c[k])
		}
	}
}

// The planner's statistics stop at maxStats keys however many types and
// fields the objects read make up.
func TestLearnedStatisticsStopAtMaxStats(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	for i := range maxStats + 100 {
		p := &graph.Object{ID: fmt.Sprint("p", i), Type: fmt.Sprint("T", i), Refs: []graph.Ref{{Field: "f", ID: fmt.Sprint("c", i)}}}
		l.Read([]*graph.Object{p}, false, 0)
		l.Read([]*graph.Object{node(fmt.Sprint("c", i))}, false, 0) // a follow: T<i>'s statistics
	}
	assert.Len(t, l.stats, maxStats)
}

// BenchmarkLearnedManyFields is the planner's cost on an object of 16,000
// refs each of a field of its own: one Read of it, and one Chances.
func BenchmarkLearnedManyFields(b *testing.B) {
	o := manyFields("m", 16000)
	l := NewLearned(LearnedConfig{})
	l.Read([]*graph.Object{o}, false, 0)
	l.Read([]*graph.Object{node("m.0")}, false, 0)
	b.Run("op=Read", func(b *testing.B) {
		for b.Loop() {
			l.Read([]*graph.Object{o}, false, 0)
		}
	})
	b.Run("op=Chances", func(b *testing.B) {
		var buf []float64
		for b.Loop() {
			buf = l.Chances(o, 0, 0, buf)
		}
	})
}
