package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lookahead-dev/lookahead"
	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/launch"
	"github.com/lookahead-dev/lookahead/internal/scrape"
)

// Defaults of Config's zero values.
const (
	DefaultClients    = 64
	DefaultDuration   = 60 * time.Second
	DefaultConns      = 4
	DefaultRoots      = 50
	DefaultGraphDepth = 2
	DefaultTimeout    = 5 * time.Second
)

// DefaultMix is the default weight of each operation: mostly reads, as a
// cache sees.
var DefaultMix = Mix{Get: 80, Graph: 10, Put: 10}

// Mix weighs the operations the clients pick at random.
type Mix struct{ Get, Graph, Put int }

// Config is one soak run. Zero values take the defaults above.
type Config struct {
	Bin         string        // directory holding the origin and sidecar binaries; required
	Clients     int           // concurrent clients
	Duration    time.Duration // how long the load runs
	Conns       int           // gRPC connections the clients share
	Roots       int           // task trees seeded at the origin
	Mix         Mix           // operation weights; all zero = DefaultMix
	GraphDepth  int           // depth of each GetGraph
	Timeout     time.Duration // deadline of each request
	SidecarArgs []string      // extra sidecar flags
	OriginArgs  []string      // extra origin flags
	Log         io.Writer     // the processes' logs; nil = discarded
}

func (c *Config) setDefaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Clients, DefaultClients)
	def(&c.Conns, DefaultConns)
	def(&c.Roots, DefaultRoots)
	def(&c.GraphDepth, DefaultGraphDepth)
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Mix == (Mix{}) {
		c.Mix = DefaultMix
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
}

func (c Config) validate() error {
	var errs []error
	if c.Bin == "" {
		errs = append(errs, errors.New("soak: no binaries directory"))
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"clients", c.Clients}, {"conns", c.Conns}, {"roots", c.Roots}} {
		if v.n < 1 {
			errs = append(errs, fmt.Errorf("soak: %s %d: must be at least 1", v.name, v.n))
		}
	}
	if c.Mix.Get < 0 || c.Mix.Graph < 0 || c.Mix.Put < 0 {
		errs = append(errs, fmt.Errorf("soak: mix %+v: weights must not be negative", c.Mix))
	}
	if c.Duration < 0 || c.Timeout < 0 || c.GraphDepth < 0 {
		errs = append(errs, errors.New("soak: duration, timeout and graph depth must not be negative"))
	}
	return errors.Join(errs...)
}

// Operations.
const (
	OpGet   = "Get"
	OpGraph = "GetGraph"
	OpPut   = "Put"
)

// Snapshot is the sidecar's process, read from its /metrics.
type Snapshot struct {
	Goroutines float64 // go_goroutines
	RSS        float64 // process_resident_memory_bytes
}

// OpStats is what the clients saw of one operation.
type OpStats struct {
	Requests int
	Codes    map[codes.Code]int
	P50, P99 time.Duration
}

// Report is the outcome of a run.
type Report struct {
	Clients    int
	Elapsed    time.Duration
	Ops        map[string]*OpStats
	Unexpected []string // up to 10 examples of failed requests
	Failed     int      // requests that failed
	Start, End Snapshot
	// SidecarRequests is grpc_server_handled_total by method and code
	// ("Get OK") at the end: the server's own count, to compare with the
	// clients'.
	SidecarRequests map[string]float64
	RoundTrips      float64 // lookahead_origin_round_trips_total at the end
}

// Run starts an origin and a sidecar from cfg.Bin, warms one connection
// per cfg.Conns, snapshots the sidecar, runs cfg.Clients clients for
// cfg.Duration, snapshots again, and stops both processes. It returns an
// error only when the run could not be made; failed requests are in the
// report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	data, err := os.MkdirTemp("", "lookahead-soak-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(data)
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	origin, err := launch.Start(sctx, filepath.Join(cfg.Bin, "origin"), append([]string{
		"--listen", "127.0.0.1:0", "--metrics-listen", "", "--data", data,
		"--seed", "tasks", "--task-roots", strconv.Itoa(cfg.Roots),
	}, cfg.OriginArgs...), cfg.Log)
	if err != nil {
		return nil, err
	}
	defer origin.Stop(10 * time.Second)
	if err := origin.WaitServing(sctx); err != nil {
		return nil, err
	}
	sidecar, err := launch.Start(sctx, filepath.Join(cfg.Bin, "sidecar"), append([]string{
		"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--origin", origin.GRPC,
	}, cfg.SidecarArgs...), cfg.Log)
	if err != nil {
		return nil, err
	}
	defer sidecar.Stop(10 * time.Second)
	if err := sidecar.WaitServing(sctx); err != nil {
		return nil, err
	}

	conns := make([]*lookahead.Client, cfg.Conns)
	for i := range conns {
		c, err := lookahead.Dial(sidecar.GRPC)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		if _, _, err := c.Get(sctx, "task-0", nil); err != nil { // connect before the baseline
			return nil, fmt.Errorf("warm-up: %w", err)
		}
		conns[i] = c
	}
	rep := &Report{Clients: cfg.Clients, Ops: map[string]*OpStats{}}
	if rep.Start, err = snapshot(ctx, sidecar.MetricsURL()); err != nil {
		return nil, err
	}

	results := make([]clientResult, cfg.Clients)
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(cfg.Duration)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := worker{cfg: cfg, c: conns[i%len(conns)], rng: rand.New(rand.NewPCG(uint64(i), 0x736f616b)), id: i}
			results[i] = w.run(ctx, end)
		}()
	}
	wg.Wait()
	rep.Elapsed = time.Since(start)

	if rep.End, err = snapshot(ctx, sidecar.MetricsURL()); err != nil {
		return nil, err
	}
	m, err := scrape.Fetch(ctx, sidecar.MetricsURL())
	if err != nil {
		return nil, err
	}
	rep.SidecarRequests = map[string]float64{}
	for _, mt := range m["grpc_server_handled_total"].GetMetric() {
		var method, code string
		for _, l := range mt.GetLabel() {
			switch l.GetName() {
			case "grpc_method":
				method = l.GetValue()
			case "grpc_code":
				code = l.GetValue()
			}
		}
		rep.SidecarRequests[method+" "+code] += mt.GetCounter().GetValue()
	}
	rep.RoundTrips = m.Sum("lookahead_origin_round_trips_total")
	rep.merge(results)
	return rep, nil
}

func snapshot(ctx context.Context, url string) (Snapshot, error) {
	m, err := scrape.Fetch(ctx, url)
	if err != nil {
		return Snapshot{}, err
	}
	return Snapshot{Goroutines: m.Sum("go_goroutines"), RSS: m.Sum("process_resident_memory_bytes")}, nil
}

// clientResult is one client's tally, merged after the run.
type clientResult struct {
	latency  map[string][]time.Duration
	codes    map[string]map[codes.Code]int
	failures []string
}

type worker struct {
	cfg Config
	c   *lookahead.Client
	rng *rand.Rand
	id  int
}

// run issues requests back to back until end; a request in flight at end
// finishes under its own deadline, so the caller's stop is never an error.
func (w *worker) run(ctx context.Context, end time.Time) clientResult {
	res := clientResult{latency: map[string][]time.Duration{}, codes: map[string]map[codes.Code]int{}}
	total := w.cfg.Mix.Get + w.cfg.Mix.Graph + w.cfg.Mix.Put
	for n := 0; time.Now().Before(end) && ctx.Err() == nil; n++ {
		op := OpPut
		switch r := w.rng.IntN(total); {
		case r < w.cfg.Mix.Get:
			op = OpGet
		case r < w.cfg.Mix.Get+w.cfg.Mix.Graph:
			op = OpGraph
		}
		rctx, cancel := context.WithTimeout(context.Background(), w.cfg.Timeout)
		start := time.Now()
		err := w.do(rctx, op, n)
		res.latency[op] = append(res.latency[op], time.Since(start))
		cancel()
		if res.codes[op] == nil {
			res.codes[op] = map[codes.Code]int{}
		}
		res.codes[op][status.Code(err)]++
		if err != nil && len(res.failures) < 10 {
			res.failures = append(res.failures, fmt.Sprintf("%s: %v", op, err))
		}
	}
	return res
}

// do makes one request. Ids follow the task trees' layout: task-R.K with K
// in [0, 781).
func (w *worker) do(ctx context.Context, op string, n int) error {
	root := graph.TaskTrees{}.RootID(w.rng.IntN(w.cfg.Roots))
	k := w.rng.IntN(781)
	id := root
	if k > 0 {
		id = root + "." + strconv.Itoa(k)
	}
	switch op {
	case OpGet:
		o, _, err := w.c.Get(ctx, id, nil)
		if err == nil && o.GetId() != id {
			return fmt.Errorf("asked for %s, got %s", id, o.GetId())
		}
		return err
	case OpGraph:
		_, err := w.c.GetGraph(ctx, lookahead.Graph{Roots: []string{id}, Depth: lookahead.Uint32(uint32(w.cfg.GraphDepth))},
			func(lookahead.Result) error { return nil })
		return err
	}
	// An application's update: read, change the payload, keep the refs.
	o, _, err := w.c.Get(ctx, id, nil)
	if err != nil {
		return err
	}
	o.Payload = []byte(fmt.Sprintf("soak %d/%d", w.id, n))
	_, err = w.c.Service().Put(ctx, &lookaheadv1.PutRequest{Object: o})
	return err
}
