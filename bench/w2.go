package bench

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lookahead-dev/lookahead/bench/knafla"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
)

// W2Config sizes W2, Knafla's navigation.
type W2Config struct {
	Pages        int             // pages in the dataset
	Visit        int             // pages one navigation visits (Knafla: 195)
	PayloadBytes int             // per object
	Think        []time.Duration // think time per object, swept
	Workers      []int           // --prefetch-workers, swept; demand fetching is the baseline
	Depth        int             // --prefetch-depth of the prefetching sidecars
	MaxObjects   int             // --prefetch-max-objects
	Reps         int
	LatencyMS    int
}

// w2Conditions are Knafla's accuracy conditions: how many of an Out-Ref
// object's three refs, all of which the sidecar prefetches, the navigation
// follows.
var w2Conditions = []struct {
	Name   string
	Follow int
}{{"Correct", 3}, {"One incorrect", 2}, {"Two incorrect", 1}}

type w2Sample struct {
	Elapsed time.Duration
	Objects int
	Think   time.Duration // measured think time per object
	C       counters
	Reads   w2Reads // near-cache rows only
}

// w2Cell is one think time × condition × workers (0 = prefetch off,
// w2Default = the sidecar's default prefetching) × whether the application
// reads through a near cache.
type w2Cell struct {
	Think   time.Duration
	Cond    int // index into w2Conditions
	Workers int
	Near    bool
	Samples []w2Sample
}

func (c *w2Cell) med(f func(w2Sample) float64) float64 {
	xs := make([]float64, len(c.Samples))
	for i, s := range c.Samples {
		xs[i] = f(s)
	}
	return median(xs)
}

func (c *w2Cell) elapsed() time.Duration {
	return time.Duration(c.med(func(s w2Sample) float64 { return float64(s.Elapsed) }))
}

type w2Result struct {
	Cfg   W2Config
	RTT   time.Duration
	Cells []*w2Cell
}

func (r *w2Result) cell(think time.Duration, cond, workers int) *w2Cell {
	return r.cellNear(think, cond, workers, false)
}

func (r *w2Result) cellNear(think time.Duration, cond, workers int, near bool) *w2Cell {
	for _, c := range r.Cells {
		if c.Think == think && c.Cond == cond && c.Workers == workers && c.Near == near {
			return c
		}
	}
	return nil
}

// saving is 1 − elapsed(prefetch)/elapsed(demand), both medians of this run.
func (r *w2Result) saving(think time.Duration, cond, workers int) float64 {
	return r.savingOf(r.cell(think, cond, 0), r.cell(think, cond, workers))
}

func (r *w2Result) savingOf(d, p *w2Cell) float64 {
	if d == nil || p == nil || len(d.Samples) == 0 || len(p.Samples) == 0 {
		return math.NaN()
	}
	return 1 - float64(p.elapsed())/float64(d.elapsed())
}

// stallHidden is the share of demand fetching's stall (its elapsed time
// less the think time it measured) that p's configuration removed: at think
// time 0 the same as the saving.
func (r *w2Result) stallHidden(d, p *w2Cell) float64 {
	if d == nil || p == nil || len(d.Samples) == 0 || len(p.Samples) == 0 {
		return math.NaN()
	}
	thought := d.med(func(s w2Sample) float64 { return float64(s.Think) * float64(s.Objects) })
	stall := float64(d.elapsed()) - thought
	return (float64(d.elapsed()) - float64(p.elapsed())) / stall
}

// w2Default stands for the sidecar with no prefetch flags (adaptive, its
// default workers) where a cell's workers go.
const w2Default = -1

// rowWorkers are the prefetching configurations of the tables: the static
// ones swept, then the default.
func (r *w2Result) rowWorkers() []int { return append(slices.Clone(r.Cfg.Workers), w2Default) }

// nearWorkers is the prefetch configuration the near-cache rows use: the
// most workers swept.
func (r *w2Result) nearWorkers() int { return slices.Max(r.Cfg.Workers) }

func writeKnafla(path string, d knafla.Dataset) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := d.Generate(func(o *graph.Object) error { return graph.EncodeNDJSON(w, o) }); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func runW2(ctx context.Context, e *env, cfg W2Config) (*w2Result, error) {
	ds := knafla.Dataset{Pages: cfg.Pages, PayloadBytes: cfg.PayloadBytes, Seed: 1}
	path := filepath.Join(e.tmp, "knafla.ndjson")
	if err := writeKnafla(path, ds); err != nil {
		return nil, err
	}
	e.progress("w2: starting origin with %d pages of %d objects (--load %s)", cfg.Pages, knafla.PageObjects, filepath.Base(path))
	o, err := e.startOrigin(ctx, "w2", "--load", path)
	if err != nil {
		return nil, err
	}
	defer o.stop()
	if err := o.link.setLatency(cfg.LatencyMS); err != nil {
		return nil, err
	}
	res := &w2Result{Cfg: cfg}
	if res.RTT, err = pingRTT(ctx, o.Addr(), 50); err != nil {
		return nil, err
	}
	e.progress("w2: latency %d ms one way: measured round trip %s", cfg.LatencyMS, fmtMS(res.RTT))

	type config struct {
		workers int
		near    bool
	}
	configs := []config{{0, false}}
	for _, w := range res.rowWorkers() {
		configs = append(configs, config{w, false})
	}
	configs = append(configs, config{res.nearWorkers(), true})
	for _, think := range cfg.Think {
		for ci := range w2Conditions {
			for _, c := range configs {
				res.Cells = append(res.Cells, &w2Cell{Think: think, Cond: ci, Workers: c.workers, Near: c.near})
			}
		}
	}
	for rep := 0; rep < cfg.Reps; rep++ {
		for ti, think := range cfg.Think {
			for ci, cond := range w2Conditions {
				// Every configuration of a repetition and condition makes the
				// same navigation, so their times compare like for like.
				nav := knafla.Navigation{Follow: cond.Follow, Pages: cfg.Visit, TotalPages: cfg.Pages,
					Start: (rep*7919 + ci*104729) % cfg.Pages, Seed: uint64(rep*10 + ci + 1)}
				for _, cf := range rotate(configs, rep+ti+ci) {
					s, err := w2Run(ctx, e, o.Addr(), cfg, nav, think, cf.workers, cf.near)
					if err != nil {
						return nil, fmt.Errorf("%s, %s, think %v: %w", cond.Name, w2LabelNear(cf.workers, cf.near), think, err)
					}
					c := res.cellNear(think, ci, cf.workers, cf.near)
					c.Samples = append(c.Samples, s)
					e.progress("w2: rep %d/%d think %-6v %-13s %-22s %s (%d objects, %s origin round trips, prefetch used %s of %s)",
						rep+1, cfg.Reps, think, cond.Name, w2LabelNear(cf.workers, cf.near), fmtDur(s.Elapsed), s.Objects,
						fmtCount(s.C.RoundTrips), fmtCount(s.C.Used), fmtCount(s.C.Issued))
				}
			}
		}
	}
	return res, nil
}

func w2Label(workers int) string {
	switch workers {
	case 0:
		return "demand"
	case w2Default:
		return "default (adaptive)"
	}
	return strconv.Itoa(workers) + " worker" + plural(workers, "", "s")
}

func w2LabelNear(workers int, near bool) string {
	if near {
		return w2Label(workers) + " + near cache"
	}
	return w2Label(workers)
}

func w2Run(ctx context.Context, e *env, originAddr string, cfg W2Config, nav knafla.Navigation, think time.Duration, workers int, near bool) (s w2Sample, err error) {
	args := []string{"--prefetch-mode", "off"}
	switch {
	case workers == w2Default:
		args = nil
	case workers > 0:
		args = []string{"--prefetch-mode", "static", "--prefetch-depth", strconv.Itoa(cfg.Depth),
			"--prefetch-max-objects", strconv.Itoa(cfg.MaxObjects), "--prefetch-workers", strconv.Itoa(workers),
			"--prefetch-fields", strings.Join(knafla.Fields, ",")}
	}
	sc, err := e.startSidecar(ctx, originAddr, args...)
	if err != nil {
		return s, err
	}
	defer func() {
		if serr := sc.stop(); err == nil {
			err = serr
		}
	}()
	cl := sc.c
	if near {
		if cl, err = sc.nearClient(ctx); err != nil {
			return s, err
		}
		defer cl.Close()
	}
	before, err := sc.scrape(ctx)
	if err != nil {
		return s, err
	}
	get := func(ctx context.Context, id string) (*graph.Object, error) {
		start := time.Now()
		o, st, err := cl.Get(ctx, id, nil)
		if near {
			s.Reads.add(st, time.Since(start))
		}
		return graphpb.FromProto(o), err
	}
	var thought time.Duration
	thinkFn := func() {
		if think > 0 {
			t := time.Now()
			spin(think)
			thought += time.Since(t)
		}
	}
	start := time.Now()
	st, err := knafla.Navigate(ctx, nav, get, thinkFn)
	if err != nil {
		return s, err
	}
	s.Elapsed = time.Since(start)
	s.Objects = st.Objects
	if st.Objects > 0 {
		s.Think = thought / time.Duration(st.Objects)
	}
	after, err := sc.scrape(ctx)
	if err != nil {
		return s, err
	}
	s.C = countersOf(after).minus(countersOf(before))
	return s, nil
}

// tables renders W2: a summary of savings, then one table per think time
// with the sidecar's own counters.
func (r *w2Result) tables() (summary, stall string, detail []string) {
	header := []string{"condition", "sidecar"}
	for _, t := range r.Cfg.Think {
		header = append(header, "think "+fmtThink(t))
	}
	var rows [][]string
	for ci, cond := range w2Conditions {
		for _, w := range r.rowWorkers() {
			row := []string{cond.Name, w2Label(w)}
			for _, t := range r.Cfg.Think {
				row = append(row, fmtPct(r.saving(t, ci, w)))
			}
			rows = append(rows, row)
		}
	}
	for ci, cond := range w2Conditions {
		row := []string{cond.Name, w2LabelNear(r.nearWorkers(), true)}
		for _, t := range r.Cfg.Think {
			row = append(row, fmtPct(r.savingOf(r.cell(t, ci, 0), r.cellNear(t, ci, r.nearWorkers(), true))))
		}
		rows = append(rows, row)
	}
	summary = table(header, rows)
	var hidden [][]string
	for ci, cond := range w2Conditions {
		for _, near := range []bool{false, true} {
			row := []string{cond.Name, w2LabelNear(r.nearWorkers(), near)}
			for _, t := range r.Cfg.Think {
				row = append(row, fmtPct(r.stallHidden(r.cell(t, ci, 0), r.cellNear(t, ci, r.nearWorkers(), near))))
			}
			hidden = append(hidden, row)
		}
		row := []string{cond.Name, w2Label(w2Default)}
		for _, t := range r.Cfg.Think {
			row = append(row, fmtPct(r.stallHidden(r.cell(t, ci, 0), r.cell(t, ci, w2Default))))
		}
		hidden = append(hidden, row)
	}
	stall = table(header, hidden)
	for _, t := range r.Cfg.Think {
		var rows [][]string
		for ci, cond := range w2Conditions {
			for _, c := range r.Cells {
				if c.Think != t || c.Cond != ci || len(c.Samples) == 0 {
					continue
				}
				w := c.Workers
				saving := "(baseline)"
				if w != 0 {
					saving = fmtPct(r.savingOf(r.cell(t, ci, 0), c))
				}
				issued := c.med(func(s w2Sample) float64 { return s.C.Issued })
				used := c.med(func(s w2Sample) float64 { return s.C.Used })
				prefetch, accuracy := "–", "–"
				if w != 0 {
					prefetch = fmt.Sprintf("%s / %s / %s", fmtCount(issued), fmtCount(used),
						fmtCount(c.med(func(s w2Sample) float64 { return s.C.Wasted })))
					if issued > 0 {
						accuracy = fmtPct(used / issued)
					}
				}
				rows = append(rows, []string{cond.Name, w2LabelNear(w, c.Near), fmtDur(c.elapsed()), saving,
					fmtCount(c.med(func(s w2Sample) float64 { return float64(s.Objects) })),
					fmtDur(time.Duration(c.med(func(s w2Sample) float64 { return float64(s.Think) }))),
					fmtCount(c.med(func(s w2Sample) float64 { return s.C.RoundTrips })),
					prefetch, accuracy,
					fmtCount(c.med(func(s w2Sample) float64 { return s.C.PrefetchHits })),
					fmtCount(c.med(func(s w2Sample) float64 { return s.C.Late })),
					fmtCount(c.med(func(s w2Sample) float64 { return s.C.Misses })),
				})
			}
		}
		detail = append(detail, fmt.Sprintf("Think time %s per object:\n\n", fmtThink(t))+table([]string{
			"condition", "fetching", "elapsed", "saving vs demand", "objects", "measured think / object",
			"origin round trips", "prefetch issued / used / wasted", "accuracy (used / issued)",
			"prefetch-tier hits", "late (joined in flight)", "misses"}, rows))
	}
	return summary, stall, detail
}

func fmtThink(t time.Duration) string {
	if t == 0 {
		return "0"
	}
	return t.String()
}

// spin busy-waits for d: the application computing on the object. A sleep
// would not do: on this kernel time.Sleep of 50µs to 1ms returns after about
// 1.1 ms, sooner when other goroutines of the process wake the runtime, so the
// think time would depend on the configuration under test.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}
