package cache

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/metrics"
)

// gets is how many Gets h answered or missed so far.
func (h *harness) gets() float64 {
	return h.hits(metrics.TierMain) + h.hits(metrics.TierPrefetch) + val(h.m.Negative) + val(h.m.Misses)
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

func BenchmarkGetHitMain(b *testing.B) {
	const n = 10_000
	h := newHarness(b, Config{MainBytes: 64 << 20})
	keys := ids("main-", n)
	for start := 0; start < n; start += 100 {
		batch := make([]*graph.Object, 0, 100)
		for _, id := range keys[start : start+100] {
			batch = append(batch, sized(id, 1, 1024))
		}
		h.AddDemand(batch...)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := rand.IntN(n)
		for pb.Next() {
			h.Get(keys[i%n])
			i++
		}
	})
	b.StopTimer()
	b.ReportMetric(h.hits(metrics.TierMain)/h.gets(), "main-hit-ratio")
}

func BenchmarkGetHitPrefetch(b *testing.B) {
	// Every Get is a prefetched object's first hit, so it includes the
	// move to the main tier; refills happen with the timer stopped.
	const chunk = 1024
	h := newHarness(b, Config{MainBytes: 64 << 20, PrefetchBytes: 4 << 20})
	keys := make([]string, chunk)
	objs := make([]*graph.Object, chunk)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := i % chunk
		if k == 0 {
			b.StopTimer()
			for j := range objs {
				keys[j] = "pre-" + strconv.Itoa(i+j)
				objs[j] = sized(keys[j], 1, 1024)
			}
			h.AddPrefetched(objs...)
			b.StartTimer()
		}
		h.Get(keys[k])
	}
	b.StopTimer()
	b.ReportMetric(h.hits(metrics.TierPrefetch)/h.gets(), "prefetch-hit-ratio")
}

func BenchmarkAddPrefetched(b *testing.B) {
	// Batches of 64 into a tier that holds about 1000 objects: every insert
	// evicts, the steady state of an application that ignores speculation.
	const batch = 64
	h := newHarness(b, Config{PrefetchBytes: 1 << 20})
	objs := make([]*graph.Object, 4096)
	for i := range objs {
		objs[i] = sized("spec-"+strconv.Itoa(i), 1, 1024)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		start := i % len(objs)
		h.AddPrefetched(objs[start:min(start+batch, len(objs))]...)
	}
	b.StopTimer()
	b.ReportMetric(h.evictions(metrics.TierPrefetch)/float64(b.N), "evictions/object")
}

// BenchmarkGetZipf is a demand-only workload: Zipf-distributed Gets over
// 100k objects of 1 KiB with room for a tenth of them; a miss fetches (here,
// builds) the object and adds it. The hit ratio is ristretto's admission and
// eviction at work, behind lookahead's accounting.
func BenchmarkGetZipf(b *testing.B) {
	const n = 100_000
	h := newHarness(b, Config{MainBytes: n / 10 * 1024})
	keys := ids("zipf-", n)
	zipf := rand.NewZipf(rand.New(rand.NewPCG(1, 2)), 1.01, 1, n-1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := keys[zipf.Uint64()]
		if _, ok := h.Get(id); !ok {
			h.AddDemand(sized(id, 1, 1024))
		}
	}
	b.StopTimer()
	b.ReportMetric((h.hits(metrics.TierMain)+h.hits(metrics.TierPrefetch))/h.gets(), "hit-ratio")
}

// BenchmarkFillWalked is a cold graph walk's cache work: W1's 7,810 small
// objects stored as a GetGraph stores them (FillWalked, a message of 500
// at a time) into an empty cache, cleared between walks with the timer
// stopped.
func BenchmarkFillWalked(b *testing.B) {
	h := newHarness(b, Config{MainBytes: 256 << 20, PrefetchBytes: 64 << 20})
	objs := make([]*graph.Object, 7810)
	for i := range objs {
		objs[i] = &graph.Object{ID: "task-" + strconv.Itoa(i), Version: 1, Payload: make([]byte, 10)}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for start := 0; start < len(objs); start += 500 {
			h.FillWalked(h.Changes(), objs[start:min(start+500, len(objs))]...)
		}
		b.StopTimer()
		h.Clear()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(objs)), "ns/object")
}
