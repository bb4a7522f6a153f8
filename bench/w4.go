package bench

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/lookahead-dev/lookahead"
	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// W4Config sizes W4, memory under pressure.
type W4Config struct {
	CacheBytes, PrefetchBytes int64     // --cache-bytes, --prefetch-bytes
	PayloadBytes              int       // per object
	Multiples                 []float64 // working sets, in multiples of CacheBytes+PrefetchBytes
	ResultSize                int       // roots per query, prefetched together
	Levels                    int       // of each task tree (fan-out 5)
	Reps                      int
	LatencyMS                 int
}

func (c W4Config) configured() int64 { return c.CacheBytes + c.PrefetchBytes }

type w4Sample struct {
	IdleRSS, PeakRSS   int64 // VmRSS after start, VmHWM at the end
	SampledRSS         int64 // max of process_resident_memory_bytes, sampled
	PeakHeap           int64 // max of go_memstats_heap_inuse_bytes, sampled
	LiveHeap           int64 // go_memstats_heap_alloc_bytes right after a forced GC at the end
	PeakMain, PeakPref int64 // max of lookahead_cache_bytes by tier, sampled
	Walk               time.Duration
	C                  counters
}

type w4Point struct {
	Multiple float64
	Roots    int
	Bytes    int64 // object bytes of the working set
	Samples  []w4Sample
}

func (p *w4Point) med(f func(w4Sample) float64) float64 {
	xs := make([]float64, len(p.Samples))
	for i, s := range p.Samples {
		xs[i] = f(s)
	}
	return median(xs)
}

type w4Result struct {
	Cfg    W4Config
	RTT    time.Duration
	Points []*w4Point
}

func runW4(ctx context.Context, e *env, cfg W4Config) (*w4Result, error) {
	g := graph.TaskTrees{Fanout: 5, Levels: cfg.Levels, PayloadBytes: cfg.PayloadBytes, Seed: 1}
	var treeBytes int64
	one := g
	one.Roots = 1
	if err := one.Generate(func(o *graph.Object) error { treeBytes += o.Size(); return nil }); err != nil {
		return nil, err
	}
	res := &w4Result{Cfg: cfg}
	maxRoots := 0
	for _, m := range cfg.Multiples {
		roots := int(math.Ceil(m * float64(cfg.configured()) / float64(treeBytes)))
		roots = (roots + cfg.ResultSize - 1) / cfg.ResultSize * cfg.ResultSize // whole queries
		res.Points = append(res.Points, &w4Point{Multiple: m, Roots: roots, Bytes: int64(roots) * treeBytes})
		maxRoots = max(maxRoots, roots)
	}
	g.Roots = maxRoots
	e.progress("w4: starting origin with %d task trees of %d objects of %d bytes (%s)", g.Roots, g.PerRoot(),
		cfg.PayloadBytes, fmtBytes(float64(int64(g.Roots)*treeBytes)))
	o, err := e.startOrigin(ctx, "w4", "--seed", "tasks", "--task-roots", strconv.Itoa(g.Roots),
		"--task-fanout", "5", "--task-levels", strconv.Itoa(cfg.Levels), "--payload-bytes", strconv.Itoa(cfg.PayloadBytes))
	if err != nil {
		return nil, err
	}
	defer o.stop()
	if err := o.link.setLatency(cfg.LatencyMS); err != nil {
		return nil, err
	}
	if res.RTT, err = pingRTT(ctx, o.Addr(), 50); err != nil {
		return nil, err
	}
	for rep := 0; rep < cfg.Reps; rep++ {
		for _, p := range rotate(res.Points, rep) {
			s, err := w4Run(ctx, e, o.Addr(), cfg, g, p.Roots)
			if err != nil {
				return nil, fmt.Errorf("working set %.0f×: %w", p.Multiple, err)
			}
			p.Samples = append(p.Samples, s)
			e.progress("w4: rep %d/%d working set %s (%g× configured): peak RSS %s (sampled %s), prefetch wasted %s, walk %s",
				rep+1, cfg.Reps, fmtBytes(float64(p.Bytes)), p.Multiple, fmtBytes(float64(s.PeakRSS)),
				fmtBytes(float64(s.SampledRSS)), fmtBytes(s.C.WastedBytes), fmtDur(s.Walk))
		}
	}
	return res, nil
}

// w4Run walks roots task trees through a fresh sidecar, RESULT_SIZE roots per
// query, each query prefetching all its trees at once (a hint as deep as the
// trees), every object then read with its own Get.
func w4Run(ctx context.Context, e *env, originAddr string, cfg W4Config, g graph.TaskTrees, roots int) (s w4Sample, err error) {
	depth := cfg.Levels - 1
	sc, err := e.startSidecar(ctx, originAddr, "--cache-bytes", strconv.FormatInt(cfg.CacheBytes, 10),
		"--prefetch-bytes", strconv.FormatInt(cfg.PrefetchBytes, 10), "--prefetch-mode", "static",
		"--prefetch-depth", strconv.Itoa(depth), "--prefetch-max-objects", strconv.Itoa(g.PerRoot()-1), "--pprof")
	if err != nil {
		return s, err
	}
	defer func() {
		if serr := sc.stop(); err == nil {
			err = serr
		}
	}()
	pid := sc.proc.PID()
	s.IdleRSS = procStatusKB(pid, "VmRSS")
	before, err := sc.scrape(ctx)
	if err != nil {
		return s, err
	}

	sctx, stopSampling := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if m, err := sc.scrape(sctx); err == nil {
				s.SampledRSS = max(s.SampledRSS, int64(m.Sum("process_resident_memory_bytes")))
				s.PeakHeap = max(s.PeakHeap, int64(m.Sum("go_memstats_heap_inuse_bytes")))
				s.PeakMain = max(s.PeakMain, int64(m.Sum("lookahead_cache_bytes", "tier", "main")))
				s.PeakPref = max(s.PeakPref, int64(m.Sum("lookahead_cache_bytes", "tier", "prefetch")))
			}
			select {
			case <-sctx.Done():
				return
			case <-t.C:
			}
		}
	}()

	hint := &lookahead.Prefetch{Depth: lookahead.Uint32(uint32(depth)), MaxObjects: lookahead.Uint32(uint32(cfg.ResultSize * (g.PerRoot() - 1)))}
	get := func(ctx context.Context, id string) (*lookaheadv1.Object, error) {
		o, _, err := sc.c.Get(ctx, id, nil)
		return o, err
	}
	start := time.Now()
	var ws w1Sample
	for q := 0; q < roots; q += cfg.ResultSize {
		ids := make([]string, 0, cfg.ResultSize)
		for i := q; i < q+cfg.ResultSize && i < roots; i++ {
			ids = append(ids, g.RootID(i))
		}
		rs, _, err := sc.c.BatchGet(ctx, ids, hint)
		if err != nil {
			stopSampling()
			wg.Wait()
			return s, err
		}
		for _, r := range rs {
			if err := walkEach(ctx, r.Object, get, &ws); err != nil {
				stopSampling()
				wg.Wait()
				return s, err
			}
		}
	}
	s.Walk = time.Since(start)
	stopSampling()
	wg.Wait()
	s.PeakRSS = procStatusKB(pid, "VmHWM")
	if s.LiveHeap, err = sc.liveHeap(ctx); err != nil {
		return s, err
	}
	after, err := sc.scrape(ctx)
	if err != nil {
		return s, err
	}
	s.C = countersOf(after).minus(countersOf(before))
	return s, nil
}

func (r *w4Result) table() string {
	var rows [][]string
	conf := float64(r.Cfg.configured())
	for _, p := range r.Points {
		peak := p.med(func(s w4Sample) float64 { return float64(s.PeakRSS) })
		idle := p.med(func(s w4Sample) float64 { return float64(s.IdleRSS) })
		peakCol, growth := fmtBytes(peak)+" ("+fmtRatio(peak/conf)+")", fmtBytes(peak-idle)
		issued := p.med(func(s w4Sample) float64 { return s.C.PrefetchBytes })
		wasted := p.med(func(s w4Sample) float64 { return s.C.WastedBytes })
		rows = append(rows, []string{
			fmt.Sprintf("%s (%g×)", fmtBytes(float64(p.Bytes)), p.Multiple),
			peakCol, growth,
			fmtBytes(p.med(func(s w4Sample) float64 { return float64(s.SampledRSS) })),
			fmtBytes(p.med(func(s w4Sample) float64 { return float64(s.PeakHeap) })),
			fmtBytes(p.med(func(s w4Sample) float64 { return float64(s.LiveHeap) })),
			fmtBytes(p.med(func(s w4Sample) float64 { return float64(s.PeakMain) })) + " / " +
				fmtBytes(p.med(func(s w4Sample) float64 { return float64(s.PeakPref) })),
			fmtBytes(issued), fmtBytes(wasted),
			fmtCount(p.med(func(s w4Sample) float64 { return s.C.Used })) + " / " +
				fmtCount(p.med(func(s w4Sample) float64 { return s.C.Issued })),
			fmtCount(p.med(func(s w4Sample) float64 { return s.C.RoundTrips })),
			fmtDur(time.Duration(p.med(func(s w4Sample) float64 { return float64(s.Walk) }))),
		})
	}
	return table([]string{"working set (× configured)", "peak RSS, VmHWM (÷ configured)", "RSS growth over idle",
		"peak RSS, sampled", "peak Go heap in use", "live Go heap at the end (after GC)", "peak cache bytes main / prefetch", "prefetched bytes",
		"prefetch wasted bytes", "prefetch used / issued objects", "origin round trips", "walk time"}, rows)
}
