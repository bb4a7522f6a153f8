package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lookahead-dev/lookahead"
	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/launch"
	"github.com/lookahead-dev/lookahead/internal/scrape"
)

// env holds what every workload shares: the binaries, the latency proxies,
// redis-server and a scratch directory. It owns every process it starts.
type env struct {
	cfg   Config
	tmp   string
	px    *proxies
	redis *redisServer // nil when redis-server is not installed
	// redisNote says why the redis rows are missing, when they are.
	redisNote string
	adaptive  bool // bin/sidecar has --prefetch-mode adaptive
}

func (e *env) progress(format string, args ...any) {
	fmt.Fprintf(e.cfg.Progress, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// origin is a reference origin behind its own latency proxy.
type origin struct {
	proc *launch.Process
	link *link
}

// Addr is where clients reach the origin: through the proxy.
func (o *origin) Addr() string { return o.link.Addr() }

func (o *origin) stop() {
	_ = o.proc.Stop(10 * time.Second)
}

// startOrigin runs bin/origin with args on a fresh store and puts a proxy in
// front of it.
func (e *env) startOrigin(ctx context.Context, name string, args ...string) (*origin, error) {
	dir, err := os.MkdirTemp(e.tmp, "origin-"+name+"-")
	if err != nil {
		return nil, err
	}
	all := append([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "", "--data", dir, "--log-level", "warn"}, args...)
	sctx, cancel := context.WithTimeout(ctx, 10*time.Minute) // loading a dataset
	defer cancel()
	p, err := launch.Start(sctx, filepath.Join(e.cfg.Bin, "origin"), all, nil)
	if err != nil {
		return nil, err
	}
	if err := p.WaitServing(sctx); err != nil {
		p.Kill()
		return nil, err
	}
	l, err := e.px.add("origin-"+name, p.GRPC)
	if err != nil {
		p.Kill()
		return nil, err
	}
	return &origin{proc: p, link: l}, nil
}

// sidecar is one running bin/sidecar with a client connected to it.
type sidecar struct {
	proc *launch.Process
	c    *lookahead.Client
}

// startSidecar runs bin/sidecar against originAddr with extra flags.
func (e *env) startSidecar(ctx context.Context, originAddr string, flags ...string) (*sidecar, error) {
	args := append([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
		"--origin", originAddr, "--log-level", "warn"}, flags...)
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	p, err := launch.Start(sctx, filepath.Join(e.cfg.Bin, "sidecar"), args, nil)
	if err != nil {
		return nil, err
	}
	if err := p.WaitServing(sctx); err != nil {
		p.Kill()
		return nil, err
	}
	c, err := lookahead.Dial(p.GRPC)
	if err != nil {
		p.Kill()
		return nil, err
	}
	// Connect before anything is timed: an Invalidate of an id nobody uses
	// touches neither the cache's contents nor the origin.
	if _, err := c.Service().Invalidate(sctx, &lookaheadv1.InvalidateRequest{Ids: []string{"lookahead-bench-warm-up"}}); err != nil {
		c.Close()
		p.Kill()
		return nil, fmt.Errorf("sidecar warm-up: %w", err)
	}
	return &sidecar{proc: p, c: c}, nil
}

// nearBytes is the near-cache budget of the rows that use one: room for
// everything a workload reads.
const nearBytes = 256 << 20

// nearClient dials s again with a near cache and waits until its channel to
// the sidecar is up, so that nothing timed runs before it.
func (s *sidecar) nearClient(ctx context.Context) (*lookahead.Client, error) {
	c, err := lookahead.Dial(s.proc.GRPC, lookahead.WithNearCache(nearBytes), lookahead.WithClientName("bench"))
	if err != nil {
		return nil, err
	}
	for !c.NearConnected() {
		select {
		case <-ctx.Done():
			c.Close()
			return nil, fmt.Errorf("near cache: %w", ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	return c, nil
}

// withSidecar starts a sidecar against originAddr with flags, runs fn with it
// and stops it; a sidecar that does not stop cleanly fails the run.
func (e *env) withSidecar(ctx context.Context, originAddr string, flags []string, fn func(*sidecar) error) (err error) {
	sc, err := e.startSidecar(ctx, originAddr, flags...)
	if err != nil {
		return err
	}
	defer func() {
		if serr := sc.stop(); err == nil {
			err = serr
		}
	}()
	return fn(sc)
}

func (s *sidecar) scrape(ctx context.Context) (scrape.Samples, error) {
	return scrape.Fetch(ctx, s.proc.MetricsURL())
}

// liveHeap forces a garbage collection in the sidecar (it must run with
// --pprof: fetching the heap profile with gc=1 collects first) and returns
// the bytes of live objects that remain: what its memory holds, without the
// garbage the collector's pacing lets accumulate between collections.
func (s *sidecar) liveHeap(ctx context.Context) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.proc.Metrics+"/debug/pprof/heap?gc=1", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("sidecar heap profile: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("sidecar heap profile: %s (is --pprof set?)", resp.Status)
	}
	m, err := s.scrape(ctx)
	if err != nil {
		return 0, err
	}
	return int64(m.Sum("go_memstats_heap_alloc_bytes")), nil
}

// stop closes the client and stops the process; a sidecar that does not
// stop cleanly is reported, since the figures it produced are suspect.
func (s *sidecar) stop() error {
	s.c.Close()
	if err := s.proc.Stop(10 * time.Second); err != nil {
		return fmt.Errorf("sidecar: %w\n%s", err, tail(s.proc.Log(), 2000))
	}
	return nil
}

// procStatusKB reads a "Name: N kB" line of /proc/PID/status, in bytes.
func procStatusKB(pid int, name string) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, name+":"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// counters is the subset of a sidecar's /metrics the tables show, as the
// difference between two scrapes.
type counters struct {
	RoundTrips     float64 // lookahead_origin_round_trips_total
	Bytes          float64 // lookahead_origin_fetched_bytes_total, all reasons
	PrefetchBytes  float64 // of those, reason="prefetch"
	Issued, Used   float64 // lookahead_prefetch_issued_total, _used_total
	Wasted         float64 // lookahead_prefetch_wasted_total
	WastedBytes    float64
	Late, Joined   float64 // lookahead_prefetch_late_total, lookahead_inflight_joins_total
	Hits, Misses   float64
	PrefetchHits   float64 // lookahead_cache_hits_total{tier="prefetch"}
	Dropped        float64 // lookahead_prefetch_dropped_total
	ExpandRequests float64 // origin round trips with rpc="Expand"
	Pushes         float64 // lookahead_near_events_total{kind="push"}: objects pushed to near caches
}

func countersOf(s scrape.Samples) counters {
	return counters{
		RoundTrips:     s.Sum("lookahead_origin_round_trips_total"),
		ExpandRequests: s.Sum("lookahead_origin_round_trips_total", "rpc", "Expand"),
		Bytes:          s.Sum("lookahead_origin_fetched_bytes_total"),
		PrefetchBytes:  s.Sum("lookahead_origin_fetched_bytes_total", "reason", "prefetch"),
		Issued:         s.Sum("lookahead_prefetch_issued_total"),
		Used:           s.Sum("lookahead_prefetch_used_total"),
		Wasted:         s.Sum("lookahead_prefetch_wasted_total"),
		WastedBytes:    s.Sum("lookahead_prefetch_wasted_bytes_total"),
		Late:           s.Sum("lookahead_prefetch_late_total"),
		Joined:         s.Sum("lookahead_inflight_joins_total"),
		Hits:           s.Sum("lookahead_cache_hits_total"),
		PrefetchHits:   s.Sum("lookahead_cache_hits_total", "tier", "prefetch"),
		Misses:         s.Sum("lookahead_cache_misses_total"),
		Dropped:        s.Sum("lookahead_prefetch_dropped_total"),
		Pushes:         s.Sum("lookahead_near_events_total", "kind", "push"),
	}
}

func (a counters) minus(b counters) counters {
	return counters{
		RoundTrips: a.RoundTrips - b.RoundTrips, ExpandRequests: a.ExpandRequests - b.ExpandRequests,
		Bytes: a.Bytes - b.Bytes, PrefetchBytes: a.PrefetchBytes - b.PrefetchBytes,
		Issued: a.Issued - b.Issued, Used: a.Used - b.Used, Wasted: a.Wasted - b.Wasted,
		WastedBytes: a.WastedBytes - b.WastedBytes, Late: a.Late - b.Late, Joined: a.Joined - b.Joined,
		Hits: a.Hits - b.Hits, PrefetchHits: a.PrefetchHits - b.PrefetchHits, Misses: a.Misses - b.Misses,
		Dropped: a.Dropped - b.Dropped, Pushes: a.Pushes - b.Pushes,
	}
}
