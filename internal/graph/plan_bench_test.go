package graph_test

import (
	"testing"
	"time"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// BenchmarkPlanStep measures the planner, the pure core of every expansion:
// one Plan over a db4o task tree (fan-out 5, 5 levels, 781 objects) driven
// to the end, level by level, against a map standing in for the origin. The
// share of the tree already cached varies: cold (a first expansion), partial
// (the ids whose index within the tree starts with 1, 3 or 5 cached, about
// 40%) and warm (all cached: the walk a
// prefetch-tier hit triggers through what the cache holds). It reports the
// objects and ids to fetch per plan, the round trips (levels with something
// to fetch) the plan implies, and the planner's time per object.
func BenchmarkPlanStep(b *testing.B) {
	g := graph.TaskTrees{Roots: 1, Fanout: 5, Levels: 5, PayloadBytes: 10, Seed: 1}
	world := map[string]*graph.Object{}
	if err := g.Generate(func(o *graph.Object) error { world[o.ID] = o; return nil }); err != nil {
		b.Fatal(err)
	}
	root := world[g.RootID(0)]
	budget := graph.Budget{Depth: g.Levels - 1, MaxObjects: g.PerRoot() - 1}
	for _, tc := range []struct {
		name   string
		cached func(id string) bool
	}{
		{"cold", func(string) bool { return false }},
		{"partial", func(id string) bool { return len(id) > 8 && (id[7] == '1' || id[7] == '3' || id[7] == '5') }},
		{"warm", func(string) bool { return true }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			have := func(id string) (*graph.Object, bool) {
				if tc.cached(id) {
					return world[id], true
				}
				return nil, false
			}
			var objects, fetch, trips int
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				objects, fetch, trips = 0, 0, 0
				p := graph.NewPlan([]*graph.Object{root}, budget)
				for {
					st, ok := p.Step(have)
					if !ok {
						break
					}
					got := make([]*graph.Object, 0, len(st.Fetch))
					for _, id := range st.Fetch {
						got = append(got, world[id])
					}
					if len(st.Fetch) > 0 {
						trips++
						fetch += len(st.Fetch)
					}
					objects += len(p.Complete(got))
				}
			}
			elapsed := time.Since(start)
			b.ReportMetric(float64(objects), "objects/plan")
			b.ReportMetric(float64(fetch), "fetch-ids/plan")
			b.ReportMetric(float64(trips), "round-trips/plan")
			if objects > 0 {
				b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N)/float64(objects), "ns/object")
			}
		})
	}
}
