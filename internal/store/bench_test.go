package store_test

import (
	"testing"

	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/store"
)

// BenchmarkLoadTaskTrees loads db4o's benchmark dataset: 500 trees of 781
// tasks. Run it with -benchtime=1x; it reports objects per second.
func BenchmarkLoadTaskTrees(b *testing.B) {
	gen := graph.TaskTrees{Roots: 500, Fanout: 5, Levels: 5, PayloadBytes: 10, Seed: 1}
	for b.Loop() {
		b.StopTimer()
		st, _ := openStore(b, store.Config{})
		b.StartTimer()
		n, err := st.Load(gen.Generate)
		if err != nil {
			b.Fatal(err)
		}
		if n != gen.Roots*gen.PerRoot() {
			b.Fatalf("loaded %d objects, want %d", n, gen.Roots*gen.PerRoot())
		}
		b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "objects/s")
	}
}
