package prefetch

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/fetch/fetchtest"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// BenchmarkHit is the hit path as the server drives it (the fetcher's
// answer, then Scheduler.After) with every object cached, prefetch mode
// off (the static planner, as the sidecar runs it then) against adaptive
// (the default: the learned planner). Reads are W3's (random ids) or a
// walk's (breadth first through the trees, so the planner learns follows
// and schedules jobs below them), from one goroutine or from as many as
// GOMAXPROCS×8. cpu-ns/op is the process's CPU per read, the jobs the
// reads schedule included.
func BenchmarkHit(b *testing.B) {
	objs := fetchtest.Tree(b, 4, 6) // 1365 objects
	order := breadthFirst(objs)
	for _, mode := range []Mode{ModeOff, ModeAdaptive} {
		for _, reads := range []string{"random", "walk"} {
			for _, par := range []bool{false, true} {
				name := fmt.Sprintf("mode=%s/reads=%s/parallel=%v", mode, reads, par)
				b.Run(name, func(b *testing.B) { benchHits(b, newFakeOrigin(objs), order, mode, reads == "walk", par) })
			}
		}
	}
}

// BenchmarkHitExpandOrigin is BenchmarkHit's walk from one goroutine
// against an origin that has Expand, as the sidecar's reference origin
// does: a chance job then asks at every level whether one Expand would
// bring what the level lacks.
func BenchmarkHitExpandOrigin(b *testing.B) {
	objs := fetchtest.Tree(b, 4, 6)
	order := breadthFirst(objs)
	for _, mode := range []Mode{ModeOff, ModeAdaptive} {
		b.Run("mode="+string(mode), func(b *testing.B) {
			benchHits(b, &fakeExpander{Origin: newFakeOrigin(objs)}, order, mode, true, false)
		})
	}
}

func benchHits(b *testing.B, o fetch.Origin, order []string, mode Mode, walk, par bool) {
	var p Planner = Static{}
	if mode == ModeAdaptive {
		p = NewLearned(LearnedConfig{})
	}
	r := newRigWith(b, o, Config{Mode: mode}, fetch.Config{}, p, cache.Config{})
	hit := func(id string) {
		if _, _, err := r.engine.Get(context.Background(), []string{id}, Hint{}); err != nil {
			b.Error(err)
		}
	}
	for range 3 { // cached, and the planner has seen the reads
		for _, id := range order {
			hit(id)
		}
		r.engine.s.Idle()
	}
	next := func(i int, rnd *rand.Rand) string {
		if walk {
			return order[i%len(order)]
		}
		return order[rnd.IntN(len(order))]
	}
	cpu := cpuTime()
	b.ResetTimer()
	if par {
		var g atomic.Int64
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			rnd := rand.New(rand.NewPCG(uint64(g.Add(1)), 0))
			for i := int(g.Load()) * 97; pb.Next(); i++ {
				hit(next(i, rnd))
			}
		})
	} else {
		rnd := rand.New(rand.NewPCG(1, 0))
		for i := 0; i < b.N; i++ {
			hit(next(i, rnd))
		}
	}
	r.engine.s.Idle()
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// breadthFirst returns the ids of the trees objs make, root first, level by
// level.
func breadthFirst(objs []*graph.Object) []string {
	byID := make(map[string]*graph.Object, len(objs))
	child := map[string]bool{}
	for _, o := range objs {
		byID[o.ID] = o
		for _, r := range o.Refs {
			child[r.ID] = true
		}
	}
	var order []string
	for _, o := range objs {
		if !child[o.ID] {
			order = append(order, o.ID)
		}
	}
	for i := 0; i < len(order); i++ {
		for _, r := range byID[order[i]].Refs {
			order = append(order, r.ID)
		}
	}
	return order
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkHitStar is W7's star in process: a hub of 10,000 refs, and per
// op one visit, the hub then 5 of its leaves drawn at random, every object
// cached, prefetch mode off against adaptive. What adaptive adds per visit
// is the planner's cost of a hub read: its offers, and Chances over its
// refs for the read's job (past what is read of the list, nothing to
// fetch).
func BenchmarkHitStar(b *testing.B) {
	h := hub("h", 10000)
	objs := []*graph.Object{h}
	for _, r := range h.Refs {
		objs = append(objs, &graph.Object{ID: r.ID, Version: 1, Type: "Leaf"})
	}
	for _, mode := range []Mode{ModeOff, ModeAdaptive} {
		b.Run("mode="+string(mode), func(b *testing.B) {
			var p Planner = Static{}
			if mode == ModeAdaptive {
				p = NewLearned(LearnedConfig{})
			}
			r := newRigWith(b, newFakeOrigin(objs), Config{Mode: mode}, fetch.Config{}, p, cache.Config{})
			rnd := rand.New(rand.NewPCG(1, 0))
			visit := func() {
				for _, id := range []string{h.ID, "", "", "", "", ""} {
					if id == "" {
						id = h.Refs[rnd.IntN(len(h.Refs))].ID
					}
					if _, _, err := r.engine.Get(context.Background(), []string{id}, Hint{}); err != nil {
						b.Error(err)
					}
				}
				r.engine.s.Idle()
			}
			for range 200 { // cached, and the planner has seen the visits
				visit()
			}
			cpu := cpuTime()
			b.ResetTimer()
			for b.Loop() {
				visit()
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
