package prefetch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/fetch/fetchtest"
)

// BenchmarkLearnedWalkAhead is BenchmarkHit's walk with a demand round trip
// measured (rtt): every object cached, the trees read breadth first, and the
// learned planner keeping the levels due within two round trips on their
// way, which a read's job walks through when they are held (W1 at 1 and 5
// ms). cpu-ns/op is the process's CPU per read, jobs included.
func BenchmarkLearnedWalkAhead(b *testing.B) {
	objs := fetchtest.Tree(b, 4, 6) // 1365 objects
	order := breadthFirst(objs)
	for _, rtt := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond} {
		b.Run(fmt.Sprint("rtt=", rtt), func(b *testing.B) {
			r := newRigWith(b, newFakeOrigin(objs), Config{Mode: ModeAdaptive}, fetch.Config{}, NewLearned(LearnedConfig{}), cache.Config{})
			for range warmSamples {
				r.engine.s.win.demand(1, rtt)
			}
			hit := func(id string) {
				if _, _, err := r.engine.Get(context.Background(), []string{id}, Hint{}); err != nil {
					b.Error(err)
				}
				r.engine.s.Idle()
			}
			for range 3 {
				for _, id := range order {
					hit(id)
				}
			}
			cpu := cpuTime()
			b.ResetTimer()
			for i := range b.N {
				hit(order[i%len(order)])
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
