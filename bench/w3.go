package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/lookahead-dev/lookahead"
	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/bench/floor"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
	"github.com/lookahead-dev/lookahead/internal/launch"
)

// W3Config sizes W3, the hit path.
type W3Config struct {
	Objects     int   // distinct cached 1 KiB objects the load generator picks from
	Concurrency []int // concurrent callers on one connection
	Duration    time.Duration
	Reps        int
	GraphLevels int // levels of the task tree of the warm graph walk (5: 781 objects)
	GraphWalks  int
	LatencyMS   int
	// PrefetchMode is the sidecar's --prefetch-mode; empty = off, W3's
	// setting: the hit path without speculation.
	PrefetchMode string
}

const w3Payload = 1024

func (c W3Config) prefetchMode() string {
	if c.PrefetchMode == "" {
		return "off"
	}
	return c.PrefetchMode
}

// w3Unix names the sidecar reached over its unix socket instead of TCP.
const w3Unix = "sidecar, unix socket"

type w3Point struct {
	P50, P99 time.Duration
	RPS      float64
}

type w3Result struct {
	Cfg     W3Config
	RTT     time.Duration
	Targets []string
	// Points[target][concurrency index] holds one point per repetition.
	Points   map[string][][]w3Point
	HitRatio float64 // of the sidecar during the measurements, from its /metrics
	Walks    []w3Walk
}

type w3Walk struct {
	Name    string
	Objects int
	Times   []time.Duration
	Hits    float64 // share of objects the sidecar reported as cache hits
}

func runW3(ctx context.Context, e *env, cfg W3Config) (*w3Result, error) {
	g := graph.TaskTrees{Fanout: 5, Levels: cfg.GraphLevels, PayloadBytes: w3Payload, Seed: 1}
	g.Roots = max(1, (cfg.Objects+g.PerRoot()-1)/g.PerRoot())
	treeArgs := []string{"--task-roots", strconv.Itoa(g.Roots), "--task-fanout", "5",
		"--task-levels", strconv.Itoa(g.Levels), "--payload-bytes", strconv.Itoa(w3Payload)}
	var all []*graph.Object
	if err := g.Generate(func(o *graph.Object) error { all = append(all, o); return nil }); err != nil {
		return nil, err
	}
	ids := make([]string, 0, cfg.Objects)
	for _, o := range all[:min(cfg.Objects, len(all))] {
		ids = append(ids, o.ID)
	}

	e.progress("w3: starting origin, sidecar (prefetch off) and gRPC floor server with %d objects of %d bytes", len(all), w3Payload)
	o, err := e.startOrigin(ctx, "w3", append([]string{"--seed", "tasks"}, treeArgs...)...)
	if err != nil {
		return nil, err
	}
	defer o.stop()
	if err := o.link.setLatency(cfg.LatencyMS); err != nil {
		return nil, err
	}
	res := &w3Result{Cfg: cfg, Points: map[string][][]w3Point{}}
	if res.RTT, err = pingRTT(ctx, o.Addr(), 50); err != nil {
		return nil, err
	}
	sock := filepath.Join(e.tmp, "w3-sidecar.sock")
	sc, err := e.startSidecar(ctx, o.Addr(), "--prefetch-mode", cfg.prefetchMode(), "--unix-socket", sock)
	if err != nil {
		return nil, err
	}
	defer sc.stop()
	// The same sidecar over its unix socket, as an application in the same
	// pod can reach it through a shared volume.
	uc, err := lookahead.Dial("unix://" + sock)
	if err != nil {
		return nil, err
	}
	defer uc.Close()
	fl, err := launch.Start(ctx, e.cfg.Self, append([]string{floor.Command, "--listen", "127.0.0.1:0"}, treeArgs...), nil)
	if err != nil {
		return nil, fmt.Errorf("floor server: %w", err)
	}
	defer fl.Stop(5 * time.Second)
	if err := fl.WaitServing(ctx); err != nil {
		return nil, err
	}
	fc, err := grpc.NewClient(fl.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer fc.Close()
	floorRPC := lookaheadv1.NewSidecarServiceClient(fc)

	if err := w3Warm(ctx, sc.c, ids); err != nil {
		return nil, err
	}
	targets := []string{"sidecar", w3Unix, "gRPC floor"}
	var rc redisGetter
	if e.redis != nil {
		r := newRedisClient(e.redis.Addr, slices.Max(cfg.Concurrency)+4)
		defer r.Close()
		if err := r.FlushAll(ctx).Err(); err != nil {
			return nil, err
		}
		pipe := r.Pipeline()
		for _, ob := range all {
			b, err := proto.Marshal(graphpb.ToProto(ob))
			if err != nil {
				return nil, err
			}
			pipe.Set(ctx, ob.ID, b, 0)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("filling redis: %w", err)
		}
		rc = redisGetter{r}
		targets = append(targets, "redis")
	}
	res.Targets = targets
	do := map[string]func(context.Context, string) error{
		"sidecar": func(ctx context.Context, id string) error {
			_, _, err := sc.c.Get(ctx, id, nil)
			return err
		},
		w3Unix: func(ctx context.Context, id string) error {
			_, _, err := uc.Get(ctx, id, nil)
			return err
		},
		"gRPC floor": func(ctx context.Context, id string) error {
			_, err := floorRPC.Get(ctx, &lookaheadv1.GetRequest{Id: id})
			return err
		},
		"redis": rc.get,
	}
	for _, t := range targets {
		res.Points[t] = make([][]w3Point, len(cfg.Concurrency))
	}
	before, err := sc.scrape(ctx)
	if err != nil {
		return nil, err
	}
	for rep := 0; rep < cfg.Reps; rep++ {
		for ci, conc := range cfg.Concurrency {
			for _, t := range rotate(targets, rep+ci) {
				p, err := w3Load(ctx, conc, cfg.Duration, ids, do[t])
				if err != nil {
					return nil, fmt.Errorf("%s at concurrency %d: %w", t, conc, err)
				}
				res.Points[t][ci] = append(res.Points[t][ci], p)
				e.progress("w3: rep %d/%d concurrency %-3d %-10s p50 %s p99 %s %.0f req/s",
					rep+1, cfg.Reps, conc, t, fmtDur(p.P50), fmtDur(p.P99), p.RPS)
			}
		}
	}
	after, err := sc.scrape(ctx)
	if err != nil {
		return nil, err
	}
	c := countersOf(after).minus(countersOf(before))
	if c.Hits+c.Misses > 0 {
		res.HitRatio = c.Hits / (c.Hits + c.Misses)
	}

	res.Walks, err = w3Walks(ctx, e, cfg, sc.c, rc, g.RootID(0))
	if err != nil {
		return nil, err
	}
	return res, nil
}

// redisGetter reads proto-encoded objects from redis; r is nil without redis.
type redisGetter struct{ r *redis.Client }

func (g redisGetter) get(ctx context.Context, id string) error {
	b, err := g.r.Get(ctx, id).Bytes()
	if err != nil {
		return fmt.Errorf("redis get %s: %w", id, err)
	}
	return proto.Unmarshal(b, &lookaheadv1.Object{})
}

// walk returns a warm walk of the graph below root with one MGET per level.
func (g redisGetter) walk(root string) func(context.Context) (int, int, error) {
	return func(ctx context.Context) (int, int, error) {
		n := 0
		level := []string{root}
		for len(level) > 0 {
			ids := level
			vals, err := g.r.MGet(ctx, ids...).Result()
			if err != nil {
				return 0, 0, err
			}
			level = nil
			for i, v := range vals {
				s, ok := v.(string)
				if !ok {
					return 0, 0, fmt.Errorf("redis: %s not cached", ids[i])
				}
				o := &lookaheadv1.Object{}
				if err := proto.Unmarshal([]byte(s), o); err != nil {
					return 0, 0, err
				}
				n++
				for _, ref := range o.GetRefs() {
					level = append(level, ref.GetId())
				}
			}
		}
		return n, 0, nil
	}
}

// w3Warm loads ids into the sidecar and repeats until a whole pass is
// answered from the cache: the main tier's writes are asynchronous and lossy.
func w3Warm(ctx context.Context, c *lookahead.Client, ids []string) error {
	for pass := 0; pass < 10; pass++ {
		misses := 0
		for start := 0; start < len(ids); start += 500 {
			rs, _, err := c.BatchGet(ctx, ids[start:min(start+500, len(ids))], nil)
			if err != nil {
				return err
			}
			for _, r := range rs {
				if r.Cache == lookaheadv1.CacheStatus_CACHE_STATUS_MISS {
					misses++
				}
			}
		}
		if misses == 0 && pass > 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond) // let ristretto apply its buffered sets
	}
	return errors.New("w3: objects still missing from the cache after 10 passes")
}

// w3Load runs conc callers for d, each calling do on random ids back to
// back, after a short unrecorded warm-up.
func w3Load(ctx context.Context, conc int, d time.Duration, ids []string, do func(context.Context, string) error) (w3Point, error) {
	run := func(d time.Duration, record bool) ([]time.Duration, time.Duration, error) {
		lats := make([][]time.Duration, conc)
		errs := make([]error, conc)
		var wg sync.WaitGroup
		start := time.Now()
		deadline := start.Add(d)
		for w := 0; w < conc; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), uint64(start.UnixNano())))
				l := make([]time.Duration, 0, 4096)
				for time.Now().Before(deadline) {
					t := time.Now()
					if err := do(ctx, ids[rng.IntN(len(ids))]); err != nil {
						errs[w] = err
						return
					}
					if record {
						l = append(l, time.Since(t))
					}
				}
				lats[w] = l
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		var all []time.Duration
		for _, l := range lats {
			all = append(all, l...)
		}
		return all, elapsed, errors.Join(errs...)
	}
	if _, _, err := run(d/10, false); err != nil {
		return w3Point{}, err
	}
	lat, elapsed, err := run(d, true)
	if err != nil {
		return w3Point{}, err
	}
	slices.Sort(lat)
	return w3Point{P50: percentile(lat, 50), P99: percentile(lat, 99), RPS: float64(len(lat)) / elapsed.Seconds()}, nil
}

// w3Walks times the warm walk of one graph: the sidecar's GetGraph (one
// streamed call), the sidecar's BatchGet per level, and redis cache-aside
// with one MGET per level.
func w3Walks(ctx context.Context, e *env, cfg W3Config, c *lookahead.Client, rc redisGetter, root string) ([]w3Walk, error) {
	depth := lookahead.Uint32(uint32(cfg.GraphLevels - 1))
	getGraph := func(ctx context.Context) (int, int, error) {
		n, hits := 0, 0
		_, err := c.GetGraph(ctx, lookahead.Graph{Roots: []string{root}, Depth: depth}, func(r lookahead.Result) error {
			n++
			if s := r.Cache; s == lookaheadv1.CacheStatus_CACHE_STATUS_HIT || s == lookaheadv1.CacheStatus_CACHE_STATUS_HIT_PREFETCHED {
				hits++
			}
			return nil
		})
		return n, hits, err
	}
	perLevel := func(ctx context.Context) (int, int, error) {
		n, hits := 0, 0
		level := []string{root}
		for len(level) > 0 {
			rs, _, err := c.BatchGet(ctx, level, nil)
			if err != nil {
				return 0, 0, err
			}
			level = nil
			for _, r := range rs {
				n++
				if s := r.Cache; s == lookaheadv1.CacheStatus_CACHE_STATUS_HIT || s == lookaheadv1.CacheStatus_CACHE_STATUS_HIT_PREFETCHED {
					hits++
				}
				for _, ref := range r.Object.GetRefs() {
					level = append(level, ref.GetId())
				}
			}
		}
		return n, hits, nil
	}
	walks := []struct {
		name string
		fn   func(context.Context) (int, int, error)
	}{
		{"sidecar GetGraph (one streamed call)", getGraph},
		{"sidecar BatchGet per level", perLevel},
	}
	if rc.r != nil {
		walks = append(walks, struct {
			name string
			fn   func(context.Context) (int, int, error)
		}{"redis cache-aside, MGET per level", rc.walk(root)})
	}
	out := make([]w3Walk, len(walks))
	for i, w := range walks {
		out[i].Name = w.name
		for k := 0; k < 2; k++ { // warm: the first GetGraph fills the cache
			if _, _, err := w.fn(ctx); err != nil {
				return nil, fmt.Errorf("%s: %w", w.name, err)
			}
		}
	}
	hits := make([][]float64, len(walks))
	for rep := 0; rep < cfg.GraphWalks; rep++ {
		for _, i := range rotate([]int{0, 1, 2}[:len(walks)], rep) {
			start := time.Now()
			n, h, err := walks[i].fn(ctx)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", walks[i].name, err)
			}
			out[i].Times = append(out[i].Times, time.Since(start))
			out[i].Objects = n
			hits[i] = append(hits[i], float64(h)/float64(n))
		}
	}
	for i := range out {
		out[i].Hits = median(hits[i])
		e.progress("w3: warm walk %-40s %d objects, median %s", out[i].Name, out[i].Objects, fmtDur(medianDur(out[i].Times)))
	}
	return out, nil
}

func (r *w3Result) tables() (hit, walk string) {
	var rows [][]string
	for ci, conc := range r.Cfg.Concurrency {
		sc := r.Points["sidecar"][ci]
		for _, t := range r.Targets {
			ps := r.Points[t][ci]
			med := func(f func(w3Point) float64) float64 {
				xs := make([]float64, len(ps))
				for i, p := range ps {
					xs[i] = f(p)
				}
				return median(xs)
			}
			// Ratios are taken per repetition, where the configurations ran
			// back to back under the same noise, then their median.
			ratio := func(f func(w3Point) float64) string {
				if t == "sidecar" {
					return "1×"
				}
				var xs []float64
				for i := range min(len(ps), len(sc)) {
					xs = append(xs, f(sc[i])/f(ps[i]))
				}
				return fmtRatio(median(xs))
			}
			rows = append(rows, []string{strconv.Itoa(conc), t,
				fmtDur(time.Duration(med(func(p w3Point) float64 { return float64(p.P50) }))),
				fmtDur(time.Duration(med(func(p w3Point) float64 { return float64(p.P99) }))),
				fmt.Sprintf("%.0f", med(func(p w3Point) float64 { return p.RPS })),
				ratio(func(p w3Point) float64 { return float64(p.P50) }),
				ratio(func(p w3Point) float64 { return float64(p.P99) }),
				ratio(func(p w3Point) float64 { return p.RPS }),
			})
		}
	}
	hit = table([]string{"concurrency", "server", "p50", "p99", "requests/s",
		"sidecar p50 ÷ this", "sidecar p99 ÷ this", "sidecar req/s ÷ this"}, rows)

	rows = nil
	var redisOPS float64
	for _, w := range r.Walks {
		if w.Name == "redis cache-aside, MGET per level" {
			redisOPS = float64(w.Objects) / medianDur(w.Times).Seconds()
		}
	}
	for _, w := range r.Walks {
		ops := float64(w.Objects) / medianDur(w.Times).Seconds()
		vs := "–"
		if redisOPS > 0 {
			vs = fmtRatio(ops / redisOPS)
		}
		hits := "–"
		if w.Name != "redis cache-aside, MGET per level" {
			hits = fmtPct(w.Hits)
		}
		rows = append(rows, []string{w.Name, strconv.Itoa(w.Objects), fmtDur(medianDur(w.Times)),
			fmt.Sprintf("%.0f", ops), vs, hits})
	}
	walk = table([]string{"warm walk of one graph", "objects", "median walk", "objects/s", "÷ redis", "sidecar cache hits"}, rows)
	return hit, walk
}
