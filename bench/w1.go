package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/lookahead-dev/lookahead"
	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/scrape"
)

// W1Config sizes W1, db4o's task trees.
type W1Config struct {
	Roots, Fanout, Levels int // NUM_ROOT_TASKS, NUM_SUBTASKS, TASK_DEPTH
	PayloadBytes          int
	ResultSize            int   // roots one query returns
	Queries               int   // queries per repetition, each on other roots
	Reps                  int   // repetitions, each with fresh sidecars (cold caches)
	LatenciesMS           []int // one-way latency of the proxy; the first is the main table
	// SlowPeersAtAllLatencies runs the direct and redis peers (each one origin
	// round trip per object, as slow as no_prefetch) at every latency rather
	// than only at the first.
	SlowPeersAtAllLatencies bool
	// Rows names the rows to run (e.g. "full_prefetch + near cache"); empty
	// runs every row.
	Rows []string
}

// w1Row is one configuration of W1.
type w1Row struct {
	Name string
	Kind string   // "sidecar", "direct", "batched", "redis"
	Args []string // sidecar flags
	// Single asks for the query's roots one at a time (a Get each), each
	// root's walk following its Get, instead of one BatchGet of all roots.
	Single bool
	Hint   *lookahead.Prefetch // on the query's BatchGet
	Graph  bool                // one GetGraph of the query's roots instead of a query and a walk
	Expand bool                // the row may use the origin's Expand: its lower bound is one round trip
	Slow   bool                // one origin round trip per object
	Near   bool                // the application reads through a client with a near cache
	// Warm has another application read each query's graphs through the
	// sidecar (untimed) before the timed one reads them: the sidecar's
	// cache is warm, the application's near cache cold.
	Warm bool
	// Apps, past 1, is how many applications read at once through the
	// sidecar, each with its own near cache and its own query's graphs
	// (roots a share of the trees apart): the worker processes of one
	// service. The row's figures are for all of them together.
	Apps int
	NA   string // not run, and why
}

// w1Sample is one repetition of one row, per query.
type w1Sample struct {
	Query, Walk time.Duration
	RoundTrips  float64
	Bytes       float64 // object bytes from the origin (graph.Object.Size)
	C           counters
	Objects     int   // objects visited per query
	Wire        int64 // encoded bytes of those objects
	// SidecarCPU and OriginCPU are the CPU time the sidecar and origin
	// processes used during the queries (procCPU).
	SidecarCPU, OriginCPU time.Duration
}

type w1RowResult struct {
	Row     w1Row
	Samples []w1Sample
}

func (r w1RowResult) med(f func(w1Sample) float64) float64 {
	xs := make([]float64, len(r.Samples))
	for i, s := range r.Samples {
		xs[i] = f(s)
	}
	return median(xs)
}

func (r w1RowResult) query() time.Duration {
	return time.Duration(r.med(func(s w1Sample) float64 { return float64(s.Query) }))
}
func (r w1RowResult) walk() time.Duration {
	return time.Duration(r.med(func(s w1Sample) float64 { return float64(s.Walk) }))
}
func (r w1RowResult) total() time.Duration {
	return time.Duration(r.med(func(s w1Sample) float64 { return float64(s.Query + s.Walk) }))
}

// w1Latency is W1 at one latency.
type w1Latency struct {
	LatencyMS int
	RTT       time.Duration
	Rows      []w1RowResult
	Wire      int64 // encoded bytes of one query's graphs
}

type w1 struct {
	e      *env
	cfg    W1Config
	origin *origin
	rows   []w1Row
}

func (w *w1) perRoot() int {
	return graph.TaskTrees{Fanout: w.cfg.Fanout, Levels: w.cfg.Levels}.PerRoot()
}

func (w *w1) buildRows(adaptive bool) {
	depth := strconv.Itoa(w.cfg.Levels - 1)
	one := strconv.Itoa(w.perRoot() - 1)
	all := uint32(w.cfg.ResultSize * (w.perRoot() - 1))
	static := []string{"--prefetch-mode", "static", "--prefetch-depth", depth, "--prefetch-max-objects", one}
	full := &lookahead.Prefetch{Depth: lookahead.Uint32(uint32(w.cfg.Levels - 1)), MaxObjects: lookahead.Uint32(all)}
	w.rows = []w1Row{
		{Name: "no_prefetch", Kind: "sidecar", Args: []string{"--prefetch-mode", "off"}, Expand: true, Slow: true},
		{Name: "single_prefetch", Kind: "sidecar", Args: static, Single: true, Expand: true},
		{Name: "single_prefetch --no-expand", Kind: "sidecar", Args: append(static, "--no-expand"), Single: true},
		{Name: "full_prefetch", Kind: "sidecar", Args: static, Hint: full, Expand: true},
		{Name: "full_prefetch --no-expand", Kind: "sidecar", Args: append(static, "--no-expand"), Hint: full},
		{Name: "full_prefetch + near cache", Kind: "sidecar", Args: static, Hint: full, Expand: true, Near: true},
		{Name: "full_prefetch + near cache (warm sidecar)", Kind: "sidecar", Args: static, Hint: full, Expand: true, Near: true, Warm: true},
		{Name: "full_prefetch + near cache (two applications)", Kind: "sidecar", Args: static, Hint: full, Expand: true, Near: true, Apps: 2},
		{Name: "adaptive", Kind: "sidecar", Args: []string{"--prefetch-mode", "adaptive"}, Expand: true},
		{Name: "extra: GetGraph", Kind: "sidecar", Args: []string{"--prefetch-mode", "off"}, Graph: true, Expand: true},
		{Name: "peer: direct", Kind: "direct", Slow: true},
		{Name: "peer: batched client", Kind: "batched"},
		{Name: "peer: origin Expand", Kind: "expand", Expand: true},
		{Name: "peer: redis cache-aside", Kind: "redis", Slow: true},
	}
	for i := range w.rows {
		switch {
		case w.rows[i].Name == "adaptive" && !adaptive:
			w.rows[i].NA = "n/a (not built: bin/sidecar rejects --prefetch-mode adaptive)"
		case w.rows[i].Kind == "redis" && w.e.redis == nil:
			w.rows[i].NA = "n/a (" + w.e.redisNote + ")"
		}
	}
}

// keepRows drops every row not named in names (none when names is empty).
func (w *w1) keepRows(names []string) error {
	if len(names) == 0 {
		return nil
	}
	var kept []w1Row
	for _, name := range names {
		i := slices.IndexFunc(w.rows, func(r w1Row) bool { return r.Name == name })
		if i < 0 {
			return fmt.Errorf("w1: no row %q", name)
		}
		kept = append(kept, w.rows[i])
	}
	w.rows = kept
	return nil
}

// rootsOf returns the root ids of query q of repetition rep: every query of
// a run walks other trees, every row of a repetition the same ones.
func (w *w1) rootsOf(rep, q int) []string {
	g := graph.TaskTrees{}
	ids := make([]string, w.cfg.ResultSize)
	base := (rep*w.cfg.Queries + q) * w.cfg.ResultSize
	for i := range ids {
		ids[i] = g.RootID((base + i) % w.cfg.Roots)
	}
	return ids
}

func runW1(ctx context.Context, e *env, cfg W1Config) ([]w1Latency, error) {
	w := &w1{e: e, cfg: cfg}
	e.progress("w1: starting origin with %d task trees of %d objects (fan-out %d, %d levels, %d-byte payloads)",
		cfg.Roots, w.perRoot(), cfg.Fanout, cfg.Levels, cfg.PayloadBytes)
	o, err := e.startOrigin(ctx, "w1", "--seed", "tasks", "--task-roots", strconv.Itoa(cfg.Roots),
		"--task-fanout", strconv.Itoa(cfg.Fanout), "--task-levels", strconv.Itoa(cfg.Levels),
		"--payload-bytes", strconv.Itoa(cfg.PayloadBytes))
	if err != nil {
		return nil, err
	}
	defer o.stop()
	w.origin = o
	w.buildRows(e.adaptive)
	if err := w.keepRows(cfg.Rows); err != nil {
		return nil, err
	}

	var out []w1Latency
	for li, ms := range cfg.LatenciesMS {
		if err := o.link.setLatency(ms); err != nil {
			return nil, err
		}
		rtt, err := pingRTT(ctx, o.Addr(), 50)
		if err != nil {
			return nil, err
		}
		e.progress("w1: latency %d ms one way: measured round trip %s", ms, fmtMS(rtt))
		res := w1Latency{LatencyMS: ms, RTT: rtt}
		var rows []int
		for _, r := range w.rows {
			if li > 0 && r.Slow && r.Kind != "sidecar" && !cfg.SlowPeersAtAllLatencies {
				continue
			}
			res.Rows = append(res.Rows, w1RowResult{Row: r})
			if r.NA == "" {
				rows = append(rows, len(res.Rows)-1)
			}
		}
		for rep := 0; rep < cfg.Reps; rep++ {
			for _, ri := range rotate(rows, rep) {
				rr := &res.Rows[ri]
				s, err := w.runRow(ctx, rr.Row, rep)
				if err != nil {
					return nil, fmt.Errorf("w1 %s: %w", rr.Row.Name, err)
				}
				rr.Samples = append(rr.Samples, s)
				res.Wire = s.Wire
				e.progress("w1: %d ms rep %d/%d %-28s query %s walk %s, %s origin round trips, %s from origin",
					ms, rep+1, cfg.Reps, rr.Row.Name, fmtDur(s.Query), fmtDur(s.Walk), fmtCount(s.RoundTrips), fmtBytes(s.Bytes))
			}
		}
		out = append(out, res)
	}
	return out, nil
}

func (w *w1) runRow(ctx context.Context, r w1Row, rep int) (w1Sample, error) {
	var s w1Sample
	var err error
	originCPU := procCPU(w.origin.proc.PID())
	switch r.Kind {
	case "sidecar":
		s, err = w.runSidecar(ctx, r, rep)
	default:
		s, err = w.runPeer(ctx, r, rep)
	}
	if err != nil {
		return s, err
	}
	s.OriginCPU = procCPU(w.origin.proc.PID()) - originCPU
	q := float64(w.cfg.Queries)
	s.Query /= time.Duration(w.cfg.Queries)
	s.Walk /= time.Duration(w.cfg.Queries)
	s.RoundTrips /= q
	s.Bytes /= q
	s.Objects /= w.cfg.Queries
	s.Wire /= int64(w.cfg.Queries)
	s.SidecarCPU /= time.Duration(w.cfg.Queries)
	s.OriginCPU /= time.Duration(w.cfg.Queries)
	return s, nil
}

func (w *w1) runSidecar(ctx context.Context, r w1Row, rep int) (s w1Sample, err error) {
	sc, err := w.e.startSidecar(ctx, w.origin.Addr(), r.Args...)
	if err != nil {
		return s, err
	}
	defer func() {
		if serr := sc.stop(); err == nil {
			err = serr
		}
	}()
	if r.Warm { // before the near client subscribes: its pushes are its own
		if err := w.warm(ctx, sc.c, r, rep); err != nil {
			return s, err
		}
	}
	if r.Apps > 1 {
		return w.runApps(ctx, sc, r, rep)
	}
	cl := sc.c
	if r.Near {
		if cl, err = sc.nearClient(ctx); err != nil {
			return s, err
		}
		defer cl.Close()
	}
	before, err := sc.scrape(ctx)
	if err != nil {
		return s, err
	}
	get := getter(cl)
	cpu := procCPU(sc.proc.PID())
	defer func() { s.SidecarCPU = procCPU(sc.proc.PID()) - cpu }()
	for q := 0; q < w.cfg.Queries; q++ {
		roots := w.rootsOf(rep, q)
		if r.Graph {
			if err := w.getGraph(ctx, cl, roots, &s); err != nil {
				return s, err
			}
			continue
		}
		if r.Single {
			for _, id := range roots {
				start := time.Now()
				o, err := get(ctx, id)
				if err != nil {
					return s, err
				}
				s.Query += time.Since(start)
				start = time.Now()
				if err := walkEach(ctx, o, get, &s); err != nil {
					return s, err
				}
				s.Walk += time.Since(start)
			}
			continue
		}
		start := time.Now()
		rs, missing, err := cl.BatchGet(ctx, roots, r.Hint)
		if err != nil {
			return s, err
		}
		if len(missing) > 0 {
			return s, fmt.Errorf("query: missing %v", missing)
		}
		s.Query += time.Since(start)
		start = time.Now()
		for _, res := range rs {
			if err := walkEach(ctx, res.Object, get, &s); err != nil {
				return s, err
			}
		}
		s.Walk += time.Since(start)
	}
	return s, s.countSince(ctx, sc, before)
}

// runApps runs row r's queries of repetition rep for r.Apps applications
// at once, each through its own near-cache client and with its own roots
// (rootsFor); the sample is of all of them: query time until the last
// application's roots are answered, walk time from then until the last
// walk ends, objects and CPU summed.
func (w *w1) runApps(ctx context.Context, sc *sidecar, r w1Row, rep int) (s w1Sample, err error) {
	clients := make([]*lookahead.Client, r.Apps)
	for i := range clients {
		if clients[i], err = sc.nearClient(ctx); err != nil {
			return s, err
		}
		defer clients[i].Close()
	}
	before, err := sc.scrape(ctx)
	if err != nil {
		return s, err
	}
	cpu := procCPU(sc.proc.PID())
	samples := make([]w1Sample, r.Apps)
	errs := make([]error, r.Apps)
	var wg sync.WaitGroup
	start := time.Now()
	for a, c := range clients {
		wg.Go(func() {
			get := getter(c)
			for q := 0; q < w.cfg.Queries && errs[a] == nil; q++ {
				qs := time.Now()
				rs, missing, err := c.BatchGet(ctx, w.rootsFor(rep, q, a, r.Apps), r.Hint)
				if err == nil && len(missing) > 0 {
					err = fmt.Errorf("query: missing %v", missing)
				}
				if errs[a] = err; err != nil {
					return
				}
				samples[a].Query += time.Since(qs)
				for _, res := range rs {
					if errs[a] = walkEach(ctx, res.Object, get, &samples[a]); errs[a] != nil {
						return
					}
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	s.SidecarCPU = procCPU(sc.proc.PID()) - cpu
	if err := errors.Join(errs...); err != nil {
		return s, err
	}
	for _, a := range samples {
		s.Query = max(s.Query, a.Query)
		s.Objects += a.Objects
	}
	s.Wire = samples[0].Wire // one query's, as every row's: the lower bound is one application's
	s.Walk = wall - s.Query
	return s, s.countSince(ctx, sc, before)
}

// countSince sets s's counters to what sc counted since before.
func (s *w1Sample) countSince(ctx context.Context, sc *sidecar, before scrape.Samples) error {
	after, err := sc.scrape(ctx)
	if err != nil {
		return err
	}
	s.C = countersOf(after).minus(countersOf(before))
	s.RoundTrips, s.Bytes = s.C.RoundTrips, s.C.Bytes
	return nil
}

// rootsFor is rootsOf for application app of apps reading at once: each
// a share of the trees further on, so that their graphs differ.
func (w *w1) rootsFor(rep, q, app, apps int) []string {
	ids := w.rootsOf(rep, q)
	if app == 0 {
		return ids
	}
	g := graph.TaskTrees{}
	base := (rep*w.cfg.Queries+q)*w.cfg.ResultSize + app*w.cfg.Roots/apps
	for i := range ids {
		ids[i] = g.RootID((base + i) % w.cfg.Roots)
	}
	return ids
}

// warm reads every query of repetition rep through c, as the row's
// application will: another application before it, untimed.
func (w *w1) warm(ctx context.Context, c *lookahead.Client, r w1Row, rep int) error {
	get := getter(c)
	var s w1Sample
	for q := 0; q < w.cfg.Queries; q++ {
		rs, _, err := c.BatchGet(ctx, w.rootsOf(rep, q), r.Hint)
		if err != nil {
			return fmt.Errorf("warm-up query: %w", err)
		}
		for _, res := range rs {
			if err := walkEach(ctx, res.Object, get, &s); err != nil {
				return fmt.Errorf("warm-up walk: %w", err)
			}
		}
	}
	return nil
}

// getGraph asks for the query's whole graphs in one streamed GetGraph. Its
// query time runs until the roots (level 0) arrive, its walk time from then
// to the end of the stream.
func (w *w1) getGraph(ctx context.Context, c *lookahead.Client, roots []string, s *w1Sample) error {
	g := lookahead.Graph{Roots: roots, Depth: lookahead.Uint32(uint32(w.cfg.Levels - 1)),
		MaxObjects: lookahead.Uint32(uint32(len(roots) * w.perRoot()))}
	start := time.Now()
	var rootsAt time.Time
	missing, err := c.GetGraph(ctx, g, func(r lookahead.Result) error {
		if r.Level == 0 {
			rootsAt = time.Now()
		}
		s.Objects++
		s.Wire += int64(proto.Size(r.Object))
		return nil
	})
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("GetGraph: missing %v", missing)
	}
	s.Query += rootsAt.Sub(start)
	s.Walk += time.Since(rootsAt)
	return nil
}

// getter is c's Get as walkEach reads: the object alone.
func getter(c *lookahead.Client) func(context.Context, string) (*lookaheadv1.Object, error) {
	return func(ctx context.Context, id string) (*lookaheadv1.Object, error) {
		o, _, err := c.Get(ctx, id, nil)
		return o, err
	}
}

// walkEach visits the graph below root object by object, breadth-first,
// with one get per object, as db4o's activation does. root is already held.
func walkEach(ctx context.Context, root *lookaheadv1.Object, get func(context.Context, string) (*lookaheadv1.Object, error), s *w1Sample) error {
	seen := map[string]bool{root.GetId(): true}
	queue := refIDs(root, seen, nil)
	s.Objects++
	s.Wire += int64(proto.Size(root))
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		o, err := get(ctx, id)
		if err != nil {
			return fmt.Errorf("get %s: %w", id, err)
		}
		s.Objects++
		s.Wire += int64(proto.Size(o))
		queue = refIDs(o, seen, queue)
	}
	return nil
}

// refIDs appends the not yet seen ref ids of o to dst, marking them seen.
func refIDs(o *lookaheadv1.Object, seen map[string]bool, dst []string) []string {
	for _, r := range o.GetRefs() {
		if !seen[r.GetId()] {
			seen[r.GetId()] = true
			dst = append(dst, r.GetId())
		}
	}
	return dst
}

func (w *w1) runPeer(ctx context.Context, r w1Row, rep int) (s w1Sample, err error) {
	p, err := dialOrigin(w.origin.Addr())
	if err != nil {
		return s, err
	}
	defer p.close()
	var ca *cacheAside
	if r.Kind == "redis" {
		rc := newRedisClient(w.e.redis.Addr, 4)
		defer rc.Close()
		if err := rc.FlushAll(ctx).Err(); err != nil { // a cold run
			return s, fmt.Errorf("redis flushall: %w", err)
		}
		ca = &cacheAside{r: rc, o: p}
	}
	for q := 0; q < w.cfg.Queries; q++ {
		roots := w.rootsOf(rep, q)
		if r.Kind == "expand" {
			if err := w.expand(ctx, p, roots, &s); err != nil {
				return s, err
			}
			continue
		}
		start := time.Now()
		var objs []*lookaheadv1.Object
		if ca != nil {
			objs, err = ca.get(ctx, roots)
		} else {
			objs, err = p.batchGet(ctx, roots)
		}
		if err != nil {
			return s, err
		}
		s.Query += time.Since(start)
		start = time.Now()
		for _, root := range objs {
			switch r.Kind {
			case "direct":
				err = walkEach(ctx, root, func(ctx context.Context, id string) (*lookaheadv1.Object, error) {
					got, err := p.batchGet(ctx, []string{id})
					if err != nil {
						return nil, err
					}
					return got[0], nil
				}, &s)
			case "redis":
				err = walkEach(ctx, root, ca.getOne, &s)
			case "batched":
				err = walkLevels(ctx, root, p.batchGet, &s)
			}
			if err != nil {
				return s, err
			}
		}
		s.Walk += time.Since(start)
	}
	s.RoundTrips, s.Bytes = float64(p.roundTrips), float64(p.bytes)
	return s, nil
}

// walkLevels visits the graph below root a level at a time, one fetch per
// level, as a DataLoader batches what one tick of the application asks for.
func walkLevels(ctx context.Context, root *lookaheadv1.Object, fetch func(context.Context, []string) ([]*lookaheadv1.Object, error), s *w1Sample) error {
	seen := map[string]bool{root.GetId(): true}
	level := refIDs(root, seen, nil)
	s.Objects++
	s.Wire += int64(proto.Size(root))
	for len(level) > 0 {
		objs, err := fetch(ctx, level)
		if err != nil {
			return err
		}
		level = nil
		for _, o := range objs {
			s.Objects++
			s.Wire += int64(proto.Size(o))
			level = refIDs(o, seen, level)
		}
	}
	return nil
}

// w1LowerBound is the fewest origin round trips the API allows times the
// round trip, plus the bytes over the link's bandwidth.
func w1LowerBound(rt int, rtt time.Duration, wire int64, bw float64) time.Duration {
	return time.Duration(rt)*rtt + time.Duration(float64(wire)/bw*float64(time.Second))
}

// w1Table renders one latency's table.
func (w w1Latency) table(levels int, bw float64) string {
	var base time.Duration
	for _, r := range w.Rows {
		if r.Row.Name == "no_prefetch" && len(r.Samples) > 0 {
			base = r.total()
		}
	}
	var rows [][]string
	for _, r := range w.Rows {
		if r.Row.NA != "" || len(r.Samples) == 0 {
			na := r.Row.NA
			if na == "" {
				na = "not run"
			}
			rows = append(rows, []string{r.Row.Name, na, "", "", "", "", "", "", "", "", "", ""})
			continue
		}
		rt := levels // one BatchGet per level, all graphs of the query together
		if r.Row.Expand {
			rt = 1
		}
		lb := w1LowerBound(rt, w.RTT, w.Wire, bw)
		prefetch, joined := "–", "–"
		trips := fmtCount(r.med(func(s w1Sample) float64 { return s.RoundTrips }))
		if r.Row.Kind == "sidecar" {
			prefetch = fmt.Sprintf("%s / %s / %s", fmtCount(r.med(func(s w1Sample) float64 { return s.C.Issued })),
				fmtCount(r.med(func(s w1Sample) float64 { return s.C.Used })),
				fmtCount(r.med(func(s w1Sample) float64 { return s.C.Wasted })))
			if r.Row.Near {
				prefetch += fmt.Sprintf(" (%s pushed)", fmtCount(r.med(func(s w1Sample) float64 { return s.C.Pushes })))
			}
			joined = fmtCount(r.med(func(s w1Sample) float64 { return s.C.Joined }))
			if x := r.med(func(s w1Sample) float64 { return s.C.ExpandRequests }); x > 0 {
				trips += fmt.Sprintf(" (%s Expand)", fmtCount(x))
			}
		}
		speed := math.NaN()
		if base > 0 {
			speed = float64(base) / float64(r.total())
		}
		rows = append(rows, []string{
			r.Row.Name, fmtDur(r.query()), fmtDur(r.walk()), fmtDur(r.total()),
			trips, fmtBytes(r.med(func(s w1Sample) float64 { return s.Bytes })),
			prefetch, joined, fmtRatio(speed),
			fmt.Sprintf("%s (%d RT)", fmtDur(lb), rt), fmtRatio(float64(r.total()) / float64(lb)),
			r.cpuPerObject(func(s w1Sample) time.Duration { return s.SidecarCPU }) + " / " +
				r.cpuPerObject(func(s w1Sample) time.Duration { return s.OriginCPU }),
		})
	}
	return table([]string{"setting", "avg query", "avg walk", "total", "origin round trips", "bytes from origin",
		"prefetch issued / used / wasted (pushed to near caches)", "demands joined in flight", "speed-up vs no_prefetch", "lower bound", "× lower bound", "CPU / object: sidecar / origin"}, rows)
}
