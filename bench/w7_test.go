package bench

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// w7Graph is a small DAG with a shared object, a cycle and a missing ref:
// a → b, c; b → d; c → d, gone; d → a.
func w7Graph() map[string]*graph.Object {
	obj := func(id string, refs ...string) *graph.Object {
		o := &graph.Object{ID: id}
		for _, r := range refs {
			o.Refs = append(o.Refs, graph.Ref{Field: "f", ID: r})
		}
		return o
	}
	m := map[string]*graph.Object{}
	for _, o := range []*graph.Object{obj("a", "b", "c"), obj("b", "d"), obj("c", "d", "gone"), obj("d", "a")} {
		m[o.ID] = o
	}
	return m
}

func TestW7Orders(t *testing.T) {
	g := w7Graph()
	assert.Equal(t, []string{"a", "b", "d", "c"}, depthFirst(g, "a"), "each object once, cycle cut, missing left out")
	assert.Equal(t, []string{"a", "b", "c", "d"}, breadthFirst(g, "a"))
	assert.Equal(t, []string{"d", "a", "b", "c"}, breadthFirst(g, "d"))
}

func TestRandomPathEndsAtALeaf(t *testing.T) {
	var objs []*graph.Object
	require.NoError(t, graph.TaskTrees{Roots: 1, Fanout: 3, Levels: 4}.Generate(func(o *graph.Object) error {
		objs = append(objs, o)
		return nil
	}))
	m := map[string]*graph.Object{}
	for _, o := range objs {
		m[o.ID] = o
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ends := map[string]bool{}
	for range 20 {
		p := randomPath(rng, m, "task-0")
		require.Len(t, p, 4, "one object a level")
		for i := 1; i < len(p); i++ {
			assert.Contains(t, m[p[i-1]].Refs, graph.Ref{Field: graph.TaskField, ID: p[i]}, "%s does not refer to %s", p[i-1], p[i])
		}
		ends[p[3]] = true
	}
	assert.Greater(t, len(ends), 5, "paths are drawn at random")
}

func TestWithWritesWritesWhatWasRead(t *testing.T) {
	ids := []string{"a", "b", "c", "d", "e"}
	ops := withWrites(rand.New(rand.NewPCG(1, 2)), ids, 2)
	require.Len(t, ops, 7, "five reads and a write after the 2nd and 4th")
	var got []string
	read := map[string]bool{}
	for i, op := range ops {
		if op.Write {
			assert.True(t, read[op.ID], "op %d writes %s before reading it", i, op.ID)
			assert.Contains(t, []int{2, 5}, i)
			continue
		}
		read[op.ID] = true
		got = append(got, op.ID)
	}
	assert.Equal(t, ids, got)
	assert.Equal(t, reads(ids...), withWrites(nil, ids, 0), "0 writes nothing")
	assert.Equal(t, 5, distinctReads([][]w7Op{ops, reads("a", "b")}))
}

func TestPrefixedRenamesIDsAndRefs(t *testing.T) {
	var got []*graph.Object
	gen := prefixed("p/", graph.Chain{Prefix: "c", N: 2}.Generate)
	require.NoError(t, gen(func(o *graph.Object) error { got = append(got, o); return nil }))
	require.Len(t, got, 2)
	assert.Equal(t, "p/c-0", got[0].ID)
	assert.Equal(t, []graph.Ref{{Field: graph.FieldNext, ID: "p/c-1"}}, got[0].Refs)
	assert.Equal(t, "p/c-1", got[1].ID)
}

func TestW7SelectedPatterns(t *testing.T) {
	w := &w7{cfg: W7Config{Patterns: []string{"star", "chain"}}}
	got, err := w.selected()
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "chain", got[0].Name, "in the usual order")
	assert.Equal(t, "star", got[1].Name)

	w.cfg.Patterns = []string{"chain", "spiral"}
	_, err = w.selected()
	require.ErrorContains(t, err, `"spiral"`)
	assert.ErrorContains(t, err, `"four at once"`, "the error lists the names")

	w.cfg.Patterns = nil
	all, err := w.selected()
	require.NoError(t, err)
	assert.Len(t, all, 7)
}

func TestGridRowsMarksAdaptiveRowsWhenUnsupported(t *testing.T) {
	base := []w5Row{{Name: "off", Args: []string{"--prefetch-mode", "off"}}, {Name: "adaptive", Args: []string{"--prefetch-mode", "adaptive"}}}
	rows := gridRows(base, []W5Static{{Depth: 2, MaxObjects: 50}}, false)
	require.Len(t, rows, 3)
	assert.Empty(t, rows[0].NA)
	assert.NotEmpty(t, rows[1].NA)
	assert.Equal(t, w5Row{Name: "static depth 2, max 50", Static: true,
		Args: []string{"--prefetch-mode", "static", "--prefetch-depth", "2", "--prefetch-max-objects", "50"}}, rows[2])
	assert.Empty(t, gridRows(base, nil, true)[1].NA)
}

// gridCell is a cell of one sample.
func gridCell(name string, static bool, wallMS int, roundTrips float64) *w5Cell {
	return &w5Cell{Row: w5Row{Name: name, Static: static},
		Samples: []w5Sample{{Wall: time.Duration(wallMS) * time.Millisecond, RoundTrips: roundTrips}}}
}

func TestGridLossesListsWhereTheDefaultLoses(t *testing.T) {
	l := w5Latency{LatencyMS: 5, Patterns: []string{"writes", "chain", "star", "points"}, Cells: [][]*w5Cell{
		{gridCell("off", false, 100, 37), gridCell("default", false, 104, 20), gridCell("static depth 1, max 20", true, 100, 21)},
		{gridCell("off", false, 100, 50), gridCell("default", false, 90, 8), gridCell("static depth 8, max 100", true, 50, 20)},
		{gridCell("off", false, 100, 41), gridCell("default", false, 105, 41), gridCell("static depth 1, max 20", true, 80, 42)},
		{gridCell("off", false, 100, 50), gridCell("default", false, 95, 50), gridCell("static depth 1, max 20", true, 90, 93)},
	}}
	got := gridLosses([]w5Latency{l})
	assert.Contains(t, got, "- writes at 5 ms: 1.04× off, 1.04× best static;", "slower than off is a loss however close the static")
	assert.Contains(t, got, "- chain at 5 ms: 0.90× off, 1.80× best static; origin round trips 8 (default), 50 (off), 20 (best static)\n")
	assert.Contains(t, got, "- star at 5 ms: 1.05× off, 1.31× best static; origin round trips 41 (default), 41 (off), 42 (best static)\n")
	assert.NotContains(t, got, "- points at", "0.95× off and 1.06× the best static is no loss")

	l.Cells = l.Cells[3:]
	l.Patterns = l.Patterns[3:]
	assert.Contains(t, gridLosses([]w5Latency{l}), "neither slower than off nor more than 1.10× the best static")
}
