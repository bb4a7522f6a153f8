package graph_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// g builds a graph from "id: ref ref ..." adjacency; every ref field is "f"
// unless written field=id.
func buildGraph(adj map[string][]string) map[string]*graph.Object {
	out := make(map[string]*graph.Object, len(adj))
	for id, refs := range adj {
		o := &graph.Object{ID: id}
		for _, r := range refs {
			field, to := "f", r
			for i := 0; i < len(r); i++ {
				if r[i] == '=' {
					field, to = r[:i], r[i+1:]
				}
			}
			o.Refs = append(o.Refs, graph.Ref{Field: field, ID: to})
		}
		out[id] = o
	}
	return out
}

// drive runs a plan to the end against a world with some ids cached, and
// returns the ids fetched per level.
func drivePlan(p *graph.Plan, world map[string]*graph.Object, cached map[string]bool) [][]string {
	var fetched [][]string
	have := func(id string) (*graph.Object, bool) {
		if cached[id] {
			return world[id], true
		}
		return nil, false
	}
	for {
		st, ok := p.Step(have)
		if !ok {
			return fetched
		}
		var got []*graph.Object
		if len(st.Fetch) > 0 {
			fetched = append(fetched, st.Fetch)
			for _, id := range st.Fetch {
				if o, ok := world[id]; ok {
					got = append(got, o)
				}
			}
		}
		p.Complete(got)
	}
}

func TestPlanFetchesLevelByLevel(t *testing.T) {
	world := buildGraph(map[string][]string{
		"r": {"a", "b"}, "a": {"c", "d"}, "b": {"d", "r"}, // shared child d, cycle back to r
		"c": {"c"}, "d": {"e", "ghost"}, "e": {}, // self reference, dangling ref
	})
	tests := []struct {
		name    string
		budget  graph.Budget
		cached  []string
		want    [][]string
		missing []string
	}{
		{name: "depth 0 fetches nothing", budget: graph.Budget{Depth: 0}},
		{name: "depth 1", budget: graph.Budget{Depth: 1}, want: [][]string{{"a", "b"}}},
		{name: "whole graph terminates on cycles, each id once",
			budget: graph.Budget{Depth: 10}, want: [][]string{{"a", "b"}, {"c", "d"}, {"e", "ghost"}},
			missing: []string{"ghost"}},
		{name: "max objects caps fetched ids, roots free",
			budget: graph.Budget{Depth: 10, MaxObjects: 3}, want: [][]string{{"a", "b"}, {"c"}}},
		{name: "cached subtree is skipped but walked through",
			budget: graph.Budget{Depth: 10}, cached: []string{"a", "b", "d"},
			want: [][]string{{"c"}, {"e", "ghost"}}, missing: []string{"ghost"}},
		{name: "everything cached fetches only the unknown",
			budget: graph.Budget{Depth: 10}, cached: []string{"a", "b", "c", "d", "e"},
			want: [][]string{{"ghost"}}, missing: []string{"ghost"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cached := map[string]bool{}
			for _, id := range tt.cached {
				cached[id] = true
			}
			p := graph.NewPlan([]*graph.Object{world["r"]}, tt.budget)
			assert.Equal(t, tt.want, drivePlan(p, world, cached))
			assert.Equal(t, tt.missing, p.Missing())
		})
	}
}

func TestPlanFieldFilter(t *testing.T) {
	world := buildGraph(map[string][]string{
		"r": {"owner=o", "items=i1", "items=i2"}, "o": {"items=x"}, "i1": {"owner=o2"}, "i2": {},
		"x": {}, "o2": {},
	})
	p := graph.NewPlan([]*graph.Object{world["r"]}, graph.Budget{Depth: 5, Fields: []string{"items"}})
	assert.Equal(t, [][]string{{"i1", "i2"}}, drivePlan(p, world, nil))
}

func TestPlanFanOutBeyondMaxObjects(t *testing.T) {
	adj := map[string][]string{"r": nil}
	for i := 0; i < 5000; i++ {
		id := "c" + string(rune('A'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
		adj["r"] = append(adj["r"], id)
		adj[id] = nil
	}
	world := buildGraph(adj)
	p := graph.NewPlan([]*graph.Object{world["r"]}, graph.Budget{Depth: 1, MaxObjects: 100})
	got := drivePlan(p, world, nil)
	require.Len(t, got, 1)
	assert.Len(t, got[0], 100)
	assert.Equal(t, adj["r"][:100], got[0], "the first refs in order are kept")
}

func TestPlanIDsIncludesUncachedRoots(t *testing.T) {
	world := buildGraph(map[string][]string{"r1": {"a"}, "r2": {"a"}, "a": {}})
	p := graph.NewPlanIDs([]string{"r1", "r2", "r1"}, graph.Budget{Depth: 1})
	assert.Equal(t, [][]string{{"r2"}, {"a"}}, drivePlan(p, world, map[string]bool{"r1": true}))
}
