// Package bench runs the workloads of BENCH.md against the real origin and
// sidecar binaries and writes their tables and plots.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/lookahead-dev/lookahead/internal/launch"
	"github.com/lookahead-dev/lookahead/internal/store/postgres/shop"
)

// Config selects the workloads and their sizes. Preset fills it for a mode.
type Config struct {
	Mode     string    // "full", "quick" or "smoke": recorded in the report
	Bin      string    // directory holding the origin and sidecar binaries
	Self     string    // this program's executable, re-run as the floor server; default os.Executable()
	Out      string    // directory for plots and raw results; empty = none
	Markdown string    // path of the generated BENCHMARKS.md; empty = none
	Command  string    // the command line recorded in the report
	Progress io.Writer // one line per step; default os.Stderr
	Stdout   io.Writer // the tables as they are produced; default io.Discard
	// RequireRedis makes a missing redis-server an error; otherwise the
	// redis rows are reported as not run.
	RequireRedis bool
	Workloads    []string // any of w1 w2 w3 w4 w5 w6 w7; empty = all

	W1 W1Config
	W2 W2Config
	W3 W3Config
	W4 W4Config
	W5 W5Config
	W6 W6Config
	W7 W7Config
}

// Preset returns the sizes of a mode: "full" (BENCH.md's sizes, about 25
// minutes on 2 cores), "quick" (the same workloads smaller, under 3 minutes)
// or "smoke" (seconds, for the test that keeps this program from rotting).
func Preset(mode string) (Config, error) {
	c := Config{Mode: mode}
	switch mode {
	case "full":
		c.W1 = W1Config{Roots: 500, Fanout: 5, Levels: 5, PayloadBytes: 10, ResultSize: 10, Queries: 1, Reps: 3,
			LatenciesMS: []int{1, 0, 5}}
		c.W2 = W2Config{Pages: 2000, Visit: 195, PayloadBytes: 100, Reps: 3, LatencyMS: 1, Depth: 6, MaxObjects: 200,
			Think:   []time.Duration{0, 50 * time.Microsecond, 200 * time.Microsecond, time.Millisecond},
			Workers: []int{1, 2, 3}}
		c.W3 = W3Config{Objects: 2000, Concurrency: []int{1, 16, 64}, Duration: 2 * time.Second, Reps: 5,
			GraphLevels: 5, GraphWalks: 30, LatencyMS: 1}
		c.W4 = W4Config{CacheBytes: 8 << 20, PrefetchBytes: 2 << 20, PayloadBytes: 1024, Multiples: []float64{1, 3, 10},
			ResultSize: 10, Levels: 5, Reps: 3, LatencyMS: 1}
		c.W5 = W5Config{Users: 11500, MaxFriends: 3000, PayloadBytes: 100, LatenciesMS: []int{1, 0, 5}, Reps: 3,
			FoFStarts: 2, FoFMin: 200, FoFMax: 600, FoFReaders: 4, FeedStarts: 10, FeedFriends: 5, FeedPosts: 3,
			HotVisits: 100, HotPosts: 2, HotFriends: 3, Statics: w5Grid}
		c.W6 = W6Config{Shop: shop.Size{Customers: 20000, Products: 5000, Orders: 100000, ItemsPerOrder: 5, Seed: 1},
			PageOrders: 20, Pages: 5, Reps: 3, LatenciesMS: []int{1, 0, 5}}
		c.W7 = W7Config{LatenciesMS: []int{1, 0, 5}, Reps: 3, PayloadBytes: 100, Points: 20000, PointReads: 200, ChainLen: 200,
			DAGLayers: 10, DAGWidth: 16, DAGRefs: 3, StarLeaves: 10000, StarVisits: 20, StarReads: 5,
			BigTrees: 10, BigFanout: 6, BigLevels: 3, BigPayload: 128 << 10, BigVisits: 30,
			WriteTrees: 10, WriteFanout: 3, WriteLevels: 3, WriteVisits: 15, WriteEvery: 5, Statics: w7Grid}
	case "quick":
		c.W1 = W1Config{Roots: 100, Fanout: 5, Levels: 4, PayloadBytes: 10, ResultSize: 5, Queries: 1, Reps: 3,
			LatenciesMS: []int{1, 0, 5}}
		c.W2 = W2Config{Pages: 300, Visit: 20, PayloadBytes: 100, Reps: 3, LatencyMS: 1, Depth: 6, MaxObjects: 200,
			Think:   []time.Duration{0, 200 * time.Microsecond, time.Millisecond},
			Workers: []int{1, 3}}
		c.W3 = W3Config{Objects: 500, Concurrency: []int{1, 16, 64}, Duration: 400 * time.Millisecond, Reps: 3,
			GraphLevels: 5, GraphWalks: 10, LatencyMS: 1}
		c.W4 = W4Config{CacheBytes: 1 << 20, PrefetchBytes: 256 << 10, PayloadBytes: 1024, Multiples: []float64{1, 3, 10},
			ResultSize: 10, Levels: 4, Reps: 3, LatencyMS: 1}
		c.W5 = W5Config{Users: 2000, MaxFriends: 3000, PayloadBytes: 100, LatenciesMS: []int{1, 0, 5}, Reps: 3,
			FoFStarts: 1, FoFMin: 30, FoFMax: 100, FoFReaders: 4, FeedStarts: 2, FeedFriends: 5, FeedPosts: 3,
			HotVisits: 10, HotPosts: 2, HotFriends: 3, Statics: w5Grid[:2]}
		c.W6 = W6Config{Shop: shop.Size{Customers: 10000, Products: 2000, Orders: 30000, ItemsPerOrder: 5, Seed: 1},
			PageOrders: 20, Pages: 2, Reps: 3, LatenciesMS: []int{1, 0, 5}}
		c.W7 = W7Config{LatenciesMS: []int{1, 0, 5}, Reps: 3, PayloadBytes: 100, Points: 5000, PointReads: 50, ChainLen: 50,
			DAGLayers: 6, DAGWidth: 8, DAGRefs: 3, StarLeaves: 10000, StarVisits: 8, StarReads: 5,
			BigTrees: 6, BigFanout: 6, BigLevels: 3, BigPayload: 128 << 10, BigVisits: 12,
			WriteTrees: 4, WriteFanout: 3, WriteLevels: 3, WriteVisits: 4, WriteEvery: 5, Statics: w7Grid[:2]}
	case "smoke":
		c.W1 = W1Config{Roots: 4, Fanout: 3, Levels: 3, PayloadBytes: 10, ResultSize: 2, Queries: 1, Reps: 1,
			LatenciesMS: []int{0}}
		c.W2 = W2Config{Pages: 20, Visit: 3, PayloadBytes: 16, Reps: 1, LatencyMS: 0, Depth: 3, MaxObjects: 50,
			Think: []time.Duration{0}, Workers: []int{1}}
		c.W3 = W3Config{Objects: 40, Concurrency: []int{1, 4}, Duration: 100 * time.Millisecond, Reps: 1,
			GraphLevels: 3, GraphWalks: 2, LatencyMS: 0}
		c.W4 = W4Config{CacheBytes: 64 << 10, PrefetchBytes: 16 << 10, PayloadBytes: 1024, Multiples: []float64{1, 2},
			ResultSize: 2, Levels: 3, Reps: 1, LatencyMS: 0}
		c.W5 = W5Config{Users: 200, MaxFriends: 100, PayloadBytes: 16, LatenciesMS: []int{0}, Reps: 1,
			FoFStarts: 1, FoFMin: 2, FoFMax: 200, FeedStarts: 2, FeedFriends: 3, FeedPosts: 2,
			HotVisits: 5, HotPosts: 1, HotFriends: 2, Statics: w5Grid[:1]}
		c.W6 = W6Config{Shop: shop.Size{Customers: 50, Products: 20, Orders: 100, ItemsPerOrder: 3, Seed: 1},
			PageOrders: 5, Pages: 1, Reps: 1, LatenciesMS: []int{0}}
		c.W7 = W7Config{LatenciesMS: []int{0}, Reps: 1, PayloadBytes: 16, Points: 50, PointReads: 5, ChainLen: 5,
			DAGLayers: 3, DAGWidth: 3, DAGRefs: 2, StarLeaves: 100, StarVisits: 2, StarReads: 2,
			BigTrees: 2, BigFanout: 2, BigLevels: 2, BigPayload: 1 << 10, BigVisits: 2,
			WriteTrees: 2, WriteFanout: 2, WriteLevels: 2, WriteVisits: 2, WriteEvery: 2, Statics: w7Grid[:1]}
	default:
		return c, fmt.Errorf("mode %q: want full, quick or smoke", mode)
	}
	return c, nil
}

// w5Grid is the static settings W5 searches for its best static row, most
// promising first: quick mode runs the first two.
// (A quick-size search over 1/20, 1/100, 1/1000, 2/100, 2/1000 and 3/100,
// BENCHMARKS.md's W5 section, found 1/20 best on feed and hot spot at every
// latency, depth 2 best on friends of friends.)
var w5Grid = []W5Static{{Depth: 1, MaxObjects: 20}, {Depth: 2, MaxObjects: 100}, {Depth: 1, MaxObjects: 100}, {Depth: 2, MaxObjects: 1000}}

// Report is what a run produced.
type Report struct {
	Markdown string   // the whole report, as written to Config.Markdown
	Tables   []string // every markdown table, in order
	Plots    []string // paths of the plots written
	// NoPrefetchRoundTrips is W1's no_prefetch origin round trips per query
	// at the first latency, read from the sidecar's /metrics; 0 if W1 did
	// not run.
	NoPrefetchRoundTrips float64
}

func (c *Config) defaults() error {
	if c.Progress == nil {
		c.Progress = os.Stderr
	}
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	if c.Self == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		c.Self = exe
	}
	if len(c.Workloads) == 0 {
		c.Workloads = []string{"w1", "w2", "w3", "w4", "w5", "w6", "w7"}
	}
	for _, name := range []string{"origin", "sidecar"} {
		if _, err := os.Stat(filepath.Join(c.Bin, name)); err != nil {
			return fmt.Errorf("%s binary: %w (run make build)", name, err)
		}
	}
	return nil
}

func (c *Config) runs(w string) bool { return slices.Contains(c.Workloads, w) }

// Run runs the selected workloads, prints their tables to cfg.Stdout as they
// complete, and writes the plots and the markdown report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	started := time.Now()
	e := &env{cfg: cfg}
	var err error
	if e.tmp, err = os.MkdirTemp("", "lookahead-bench-"); err != nil {
		return nil, err
	}
	defer os.RemoveAll(e.tmp)
	e.px = newProxies()
	defer e.px.close()

	e.redis, err = startRedis(ctx)
	switch {
	case errors.Is(err, errNoRedis) && !cfg.RequireRedis:
		e.redisNote = "redis-server not installed"
		e.progress("redis-server not found: the redis rows are skipped")
	case err != nil:
		return nil, err
	default:
		defer e.redis.stop()
		e.progress("redis-server listening on %s", e.redis.Addr)
	}
	e.adaptive = e.sidecarSupports(ctx, "adaptive")
	e.progress("sidecar --prefetch-mode adaptive supported: %v", e.adaptive)

	r := &reporter{cfg: cfg, started: started, machine: describeMachine(ctx)}
	r.bandwidth, err = measureBandwidth(e.px, bandwidthBytes(cfg.Mode), 3)
	if err != nil {
		return nil, fmt.Errorf("bandwidth: %w", err)
	}
	e.progress("proxied loopback bandwidth: %s/s", fmtBytes(r.bandwidth))

	if cfg.runs("w1") {
		res, err := runW1(ctx, e, cfg.W1)
		if err != nil {
			return nil, fmt.Errorf("w1: %w", err)
		}
		r.w1(res)
	}
	if cfg.runs("w2") {
		res, err := runW2(ctx, e, cfg.W2)
		if err != nil {
			return nil, fmt.Errorf("w2: %w", err)
		}
		r.w2(res)
	}
	if cfg.runs("w3") {
		res, err := runW3(ctx, e, cfg.W3)
		if err != nil {
			return nil, fmt.Errorf("w3: %w", err)
		}
		r.w3(res)
	}
	if cfg.runs("w4") {
		res, err := runW4(ctx, e, cfg.W4)
		if err != nil {
			return nil, fmt.Errorf("w4: %w", err)
		}
		r.w4(res)
	}
	if cfg.runs("w5") {
		res, err := runW5(ctx, e, cfg.W5)
		if err != nil {
			return nil, fmt.Errorf("w5: %w", err)
		}
		r.w5(res)
	}
	if cfg.runs("w6") {
		res, err := runW6(ctx, e, cfg.W6)
		if err != nil {
			return nil, fmt.Errorf("w6: %w", err)
		}
		r.w6(res)
	}
	if cfg.runs("w7") {
		res, err := runW7(ctx, e, cfg.W7)
		if err != nil {
			return nil, fmt.Errorf("w7: %w", err)
		}
		r.w7(res)
	}
	return r.finish()
}

func bandwidthBytes(mode string) int64 {
	if mode == "smoke" {
		return 4 << 20
	}
	return 64 << 20
}

// sidecarSupports reports whether bin/sidecar accepts --prefetch-mode mode:
// a sidecar that rejects it exits before it listens.
func (e *env) sidecarSupports(ctx context.Context, mode string) bool {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	p, err := launch.Start(ctx, filepath.Join(e.cfg.Bin, "sidecar"), []string{"--listen", "127.0.0.1:0",
		"--metrics-listen", "", "--origin", "127.0.0.1:1", "--prefetch-mode", mode, "--health-interval", "1h"}, nil)
	if err != nil {
		return false
	}
	p.Kill()
	return true
}
