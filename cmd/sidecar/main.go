// Command sidecar runs lookahead next to an application: a gRPC cache that
// fetches object graphs from an origin and prefetches what comes next.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/bufpool"
	"github.com/lookahead-dev/lookahead/internal/buildinfo"
	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/coherence"
	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/flagconf"
	"github.com/lookahead-dev/lookahead/internal/metrics"
	"github.com/lookahead-dev/lookahead/internal/metrics/wire"
	"github.com/lookahead-dev/lookahead/internal/near"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/prefetch"
	"github.com/lookahead-dev/lookahead/internal/server"
	"github.com/lookahead-dev/lookahead/internal/tracing"
)

// Every gRPC buffer of the process, those of the proto codec included, comes
// from a pool that does not clear what it hands out (see internal/bufpool).
func init() { experimental.SetDefaultBufferPool(new(bufpool.Pool)) }

type options struct {
	cmd                                         flagconf.Command // --config, --check-config, --version, --log-level
	listen, unixSocket, metricsListen, addrFile string
	origins                                     originFlag
	unixSocketMode                              os.FileMode
	cache                                       cache.Config
	fetch                                       fetch.Config
	sched                                       prefetch.Config
	planner                                     prefetch.Static
	fields                                      string
	server                                      server.Config
	healthInterval, drainTimeout                time.Duration
	readiness                                   server.ReadinessConfig
	watch                                       bool
	coherence                                   coherence.Config
	transport                                   transportOptions // origin retries, breaker, limits; TLS
	pprof                                       bool             // serve /debug/pprof/ beside /metrics
	gcPercent                                   int              // the garbage collector's GOGC unless the environment sets one
	registry                                    registry         // nil: a new prometheus.Registry; tests pass one that records
	tracing                                     tracing.Config
	tracer                                      *tracing.Tracing // nil: from tracing; tests pass one that records
}

// registry is where run registers every collector, and what /metrics serves.
type registry interface {
	prometheus.Registerer
	prometheus.Gatherer
}

func parseFlags(args []string) (*options, error) {
	o := &options{cmd: flagconf.Command{Name: "sidecar"}}
	fs := flag.NewFlagSet("sidecar", flag.ContinueOnError)
	fs.StringVar(&o.listen, "listen", "127.0.0.1:7070", "gRPC listen address (TCP); empty disables TCP")
	fs.StringVar(&o.unixSocket, "unix-socket", "", "also listen on this unix socket path; an existing socket is replaced only when nothing listens on it, anything else there stops the start")
	o.unixSocketMode = 0o660
	fs.Var((*fileMode)(&o.unixSocketMode), "unix-socket-mode", "permission bits of --unix-socket, in octal: who may connect (write permission is needed to connect)")
	fs.StringVar(&o.metricsListen, "metrics-listen", "127.0.0.1:7072", "HTTP address for /metrics; empty disables")
	fs.BoolVar(&o.pprof, "pprof", false, "also serve Go's profiles at /debug/pprof/ on the metrics address (heap, CPU, goroutines: for diagnosing memory or CPU in production)")
	o.origins.routes = []originRoute{{target: "127.0.0.1:7071"}}
	fs.Var(&o.origins, "origin", "origin gRPC address (host:port or a grpc target such as unix:///path or dns:///host:port, whose addresses are replicas used round robin); give it once per origin as PREFIX=TARGET to route the ids starting with PREFIX there, a bare TARGET being the route of every other id")
	fs.IntVar(&o.gcPercent, "gc-percent", defaultGCPercent, "the garbage collector's target heap growth in percent (GOGC; a GOGC environment variable overrides it): higher costs less CPU per object and more memory, bounded by the memory limit")
	fs.StringVar(&o.addrFile, "addr-file", "", "write the bound gRPC and metrics addresses to this file once listening")
	o.cache.MainBytes = 256 << 20
	o.cache.PrefetchBytes = 64 << 20
	fs.Var((*byteSize)(&o.cache.MainBytes), "cache-bytes", "main tier budget in bytes (suffixes KiB, MiB, GiB)")
	fs.Var((*byteSize)(&o.cache.PrefetchBytes), "prefetch-bytes", "prefetch tier budget in bytes: room for speculative objects (db4o prefetchCacheSize)")
	fs.DurationVar(&o.cache.NegativeTTL, "negative-ttl", 5*time.Second, "how long a NOT_FOUND answer is remembered; negative disables")
	fs.DurationVar(&o.cache.TTL, "ttl", 0, "how long a cached object is fresh; 0 = until evicted or invalidated")
	fs.DurationVar(&o.fetch.StaleWhileRevalidate, "stale-while-revalidate", 0, "after --ttl, answer a stale object at once (marked stale) and refetch it in the background, for this long")
	fs.DurationVar(&o.fetch.StaleIfError, "stale-if-error", 0, "after --ttl, or while the origin's change stream is down past --watch-grace, answer a stale object (marked stale) when the origin fails, for this long")
	fs.BoolVar(&o.watch, "watch", true, "follow the origin's change stream (Watch) to invalidate changed objects")
	fs.DurationVar(&o.coherence.Grace, "watch-grace", 5*time.Second, "how long cached objects stay trusted while the change stream is down; after that they are revalidated")
	mode := fs.String("prefetch-mode", "adaptive", "prefetch mode: adaptive (fetch what applications are seen to read: per type, field and list position, likely enough to pay; --prefetch-max-objects caps a job), static (the --prefetch-depth/-max-objects/-fields settings) or off")
	fs.IntVar(&o.planner.Depth, "prefetch-depth", 3, "reference levels to prefetch below a demanded object (db4o prefetchDepth)")
	fs.IntVar(&o.planner.MaxObjects, "prefetch-max-objects", 1000, "objects one expansion may fetch (db4o prefetchObjectCount); 0 = no cap")
	fs.StringVar(&o.fields, "prefetch-fields", "", "comma-separated ref fields to follow; empty = all")
	fs.IntVar(&o.sched.Workers, "prefetch-workers", 4, "concurrent speculative origin requests (Knafla's support threads), at most: fewer while the origin sheds speculation or demand slows down")
	fs.IntVar(&o.fetch.BatchSize, "batch-size", 256, "ids per origin BatchGet")
	fs.IntVar(&o.fetch.DemandBatches, "demand-batches", 4, "demand BatchGets in flight at once; beyond it, concurrent requests' misses gather into the next batch")
	fs.IntVar(&o.sched.QueueSize, "prefetch-queue", 1024, "speculative jobs waiting for a worker, newest first (beyond it the oldest are dropped and counted), and reads waiting to be learned from (beyond it a request waits, until its deadline at most); --prefetch-queue-bytes bounds what either holds too")
	o.sched.QueueBytes = prefetch.DefaultQueueBytes
	fs.Var((*byteSize)(&o.sched.QueueBytes), "prefetch-queue-bytes", "bytes of objects the speculative jobs waiting keep alive (beyond it the oldest jobs are dropped and counted), and, apart, the reads waiting to be learned from (beyond it a request waits, until its deadline at most), objects the cache has evicted meanwhile included (suffixes KiB, MiB, GiB)")
	fs.BoolVar(&o.fetch.DisableExpand, "no-expand", false, "never use the origin's server-side Expand")
	fs.IntVar(&o.server.MaxIDs, "max-ids", 1000, "ids per request, and fields; a longer list is refused before it is decoded")
	fs.IntVar(&o.server.MaxDepth, "max-depth", 16, "largest depth a request may ask for")
	fs.IntVar(&o.server.MaxObjects, "max-objects", 100000, "largest max_objects a request may ask for")
	fs.IntVar(&o.server.MaxWalks, "max-walks", 64, "GetGraph streams served at once; beyond it new ones are refused RESOURCE_EXHAUSTED")
	o.server.StreamBytes = 64 << 20
	fs.Var((*byteSize)(&o.server.StreamBytes), "stream-memory-bytes", "bytes all replies together hold for their clients until gRPC has written them: GetGraph messages, and Get and BatchGet replies of more than 1 KiB (suffixes KiB, MiB, GiB); a reply waits for room within its deadline, a new GetGraph is refused RESOURCE_EXHAUSTED while none is left")
	fs.IntVar(&o.server.MaxOriginRequests, "max-origin-requests", 256, "Gets and BatchGets with an uncached id served at once, across all connections; more wait for a place (a request the cache answers whole never does)")
	fs.IntVar(&o.server.MaxOriginWaiting, "max-origin-waiting", 4096, "requests waiting for one of --max-origin-requests places; beyond it new ones are refused RESOURCE_EXHAUSTED")
	fs.DurationVar(&o.healthInterval, "health-interval", time.Second, "how often the origin's health is checked")
	fs.Float64Var(&o.readiness.FailureRatio, "readiness-failure-ratio", 0.5, "the sidecar is not ready (grpc.health NOT_SERVING; liveness stays SERVING) when more than this share of its origin calls in a health interval failed (at least 3), when 3 in a row failed, or while the breaker is open; 1 = only the latter two")
	fs.DurationVar(&o.drainTimeout, "drain-timeout", 10*time.Second, "graceful stop limit before in-flight requests are cut")
	o.transport.register(fs)
	o.cmd.Register(fs)
	fs.StringVar(&o.tracing.Endpoint, "otlp-endpoint", "", "send OpenTelemetry traces (requests, cache lookups, origin round trips) to this OTLP/gRPC collector: http://host:4317 (plaintext) or https://…; empty = no tracing, at no cost")
	if err := o.cmd.Parse(fs, args); err != nil || o.cmd.Version {
		return o, err
	}
	set := map[string]bool{} // flags given as flag, variable or file key
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["prefetch-mode"] && (set["prefetch-depth"] || set["prefetch-fields"]) {
		*mode = string(prefetch.ModeStatic) // a depth or fields asked for are what is used
	}
	if err := o.finish(*mode); err != nil {
		return o, err
	}
	o.cmd.Record(fs)
	return o, nil
}

func main() {
	os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr))
}

// cli runs the command with args and returns its exit status: 2 for a bad
// setting, 1 when the sidecar stopped on an error.
func cli(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args)
	return o.cmd.Run(stdout, stderr, err, func(ctx context.Context, log *slog.Logger) error { return run(ctx, o, log) })
}

// run wires the pieces, serves until ctx ends and shuts down in reverse order.
func run(ctx context.Context, o *options, log *slog.Logger) error {
	limit, source := setMemoryLimit(o.cache, o.transport.maxMessageBytes, o.server.StreamBytes, o.sched.QueueBytes)
	log.Info("memory limit", "bytes", limit, "from", source)
	gc, source := setGCPercent(o.gcPercent)
	log.Info("garbage collection", "percent", gc, "from", source)
	reg := o.registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	buildinfo.Get().Register(reg)
	m := metrics.New(reg)

	c, err := cache.New(o.cache, wire.Cache(m))
	if err != nil {
		return fmt.Errorf("cache config: %w", err)
	}
	defer c.Close()
	metrics.RegisterCacheSize(reg, wire.CacheSizes(c.Stats))
	metrics.RegisterUnread(reg, c.Unread)

	stopTLS, err := o.transport.watchTLS()
	if err != nil {
		return err
	}
	defer stopTLS()
	tr := o.tracer
	if tr == nil {
		o.tracing.Service = "lookahead-sidecar"
		if tr, err = tracing.New(ctx, o.tracing); err != nil {
			return err
		}
	}
	defer tr.Stop(log)
	o.server.Tracer = tr.Tracer("github.com/lookahead-dev/lookahead/internal/server")
	o.transport.dialOptions = tr.DialOptions()
	// Speculation backs off when the origins shed it or demand slows down:
	// the origin clients tell the scheduler's window of every round trip.
	o.sched.Window = prefetch.NewWindow(o.sched.Workers, wire.Prefetch(m))
	o.transport.client.Observe = o.sched.Window.Observe
	origs, err := o.transport.dialOrigins(o.origins.routes, m)
	if err != nil {
		return err
	}
	defer origs.Close()
	oc := origs.api // one origin's client, or a router over several

	// The watcher invalidates through the fetcher, whose trust check reads
	// back from the watcher: the trust hook closes the loop, through a
	// pointer set once both exist (nil: trust rests on TTLs).
	var watching atomic.Pointer[originWatch]
	o.fetch.Trust = func() (bool, time.Duration) {
		if w := watching.Load(); w != nil {
			return w.Trust()
		}
		return true, 0
	}
	var planner prefetch.Planner = o.planner
	if o.sched.Mode == prefetch.ModeAdaptive {
		planner = prefetch.NewLearned(prefetch.LearnedConfig{MaxDepth: o.server.MaxDepth, MaxObjects: o.planner.MaxObjects})
	}
	o.fetch.Metrics = wire.Fetch(m)
	o.fetch.Speculative = origin.Speculative
	// The near-cache hub hears of every write-side event and clear through
	// nf, and of every origin fetch: it pushes the speculative ones and
	// expires each fetched id --ttl later.
	hub, err := near.New(near.Config{MaxAge: o.cache.TTL}, reg)
	if err != nil {
		return fmt.Errorf("near config: %w", err)
	}
	defer hub.Close()
	f, err := fetch.New(o.fetch, hub.Fetching(oc), c)
	if err != nil {
		return fmt.Errorf("fetch config: %w", err)
	}
	nf := hub.Fetcher(f)
	o.sched.Metrics = wire.Prefetch(m)
	o.sched.TierBytes = c.PrefetchBytes()
	o.sched.Held = hub.Held // a warm cache's predictions are pushed too
	sched, err := prefetch.New(o.sched, f, planner)
	if err != nil {
		return fmt.Errorf("prefetch config: %w", err)
	}
	defer sched.Close()
	f.OnCaughtUp(server.NearReaders(sched.CaughtUp))
	// A new dataset on an origin's address flushes through the fetcher.
	watcher := origs.follow(o.coherence, o.watch, nf, coherence.ResetFunc(func(string) { nf.Clear() }), m, log)
	watching.Store(watcher)

	o.server.MaxReplyBytes = o.transport.maxMessageBytes
	svc, err := server.New(o.server, nf, sched, oc, log)
	if err != nil {
		return fmt.Errorf("server config: %w", err)
	}
	svc.EnableNear(hub)
	metrics.RegisterStreamMemory(reg, svc.StreamMemory)
	metrics.RegisterWalkMemory(reg, f.WalkMemory)
	metrics.RegisterOriginRequests(reg, svc.OriginRequests)
	metrics.RegisterPrefetchQueue(reg, sched.QueuedBytes)
	// The request codec comes after the counting interceptors, so that a
	// request that does not decode is counted with its INVALID_ARGUMENT.
	gm := metrics.NewGRPCServer(reg)
	sopts := append(server.Interceptors(gm), svc.Codec().ServerOptions()...)
	sopts = append(sopts, tr.ServerOptions()...)
	sopts = append(sopts, grpc.Creds(svc.Credentials(o.transport.serverCredentials()))) // each connection a prefetch.Client
	gs := grpc.NewServer(append(sopts, o.transport.serverOptions(o.server.MaxIDs)...)...)
	lookaheadv1.RegisterSidecarServiceServer(gs, svc)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	// "liveness" says only that this process serves gRPC: unlike the overall
	// status it does not follow the origin, so a liveness probe on it never
	// restarts (and empties) a cache that is answering hits in an outage.
	hs.SetServingStatus(server.LivenessService, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	reflection.Register(gs)
	gm.InitializeMetrics(gs)

	var lis []net.Listener
	defer func() { // on an early return; closing again after the server did is harmless
		for _, l := range lis {
			_ = l.Close()
		}
	}()
	if o.listen != "" {
		l, err := net.Listen("tcp", o.listen)
		if err != nil {
			return fmt.Errorf("listen %s: %w", o.listen, err)
		}
		lis = append(lis, o.transport.limitListener(l))
	}
	if o.unixSocket != "" {
		l, err := listenUnix(o.unixSocket, o.unixSocketMode)
		if err != nil {
			return err
		}
		lis = append(lis, o.transport.limitListener(l))
	}
	var hsrv *http.Server
	var metricsAddr string
	if o.metricsListen != "" {
		ml, err := net.Listen("tcp", o.metricsListen)
		if err != nil {
			return fmt.Errorf("listen %s: %w", o.metricsListen, err)
		}
		metricsAddr = ml.Addr().String()
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
		if o.pprof {
			// Registered on this mux only: importing net/http/pprof also
			// fills http.DefaultServeMux, which nothing here serves.
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		}
		hsrv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := hsrv.Serve(ml); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics server", "err", err)
			}
		}()
	}

	// Ready while the origin says it is healthy and the sidecar's own calls
	// to it work: an origin may answer SERVING while every read fails.
	ready, err := watcher.readiness(o.readiness)
	if err != nil {
		return fmt.Errorf("readiness config: %w", err)
	}
	var wg sync.WaitGroup
	wctx, cancelWatch := context.WithCancel(ctx)
	defer cancelWatch()
	wg.Go(func() { watcher.Run(wctx) })
	wg.Go(func() { server.WatchOrigin(wctx, hs, ready, o.healthInterval, m, log) })

	serveErr := make(chan error, len(lis))
	for _, l := range lis {
		go func() { serveErr <- gs.Serve(l) }()
		log.Info("serving", "addr", l.Addr().String(), "origin", o.origins.String(), "metrics", metricsAddr)
	}
	if o.addrFile != "" {
		if err := writeAddrs(o.addrFile, lis, metricsAddr); err != nil {
			return err
		}
	}

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-serveErr:
	}
	log.Info("shutting down", "drain_timeout", o.drainTimeout)
	cancelWatch()
	wg.Wait()
	hs.Shutdown() // NOT_SERVING: load balancers and probes stop sending
	stopped := make(chan struct{})
	go func() { gs.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(o.drainTimeout):
		log.Warn("drain timeout: cutting in-flight requests")
		gs.Stop()
		<-stopped
	}
	if hsrv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = hsrv.Shutdown(sctx)
	}
	// The unix listener removed its socket when the server closed it.
	return runErr
}

// writeAddrs records where the sidecar listens, for tests and scripts that
// start it on port 0: one "grpc ADDR" line per listener, then "metrics ADDR".
func writeAddrs(path string, lis []net.Listener, metricsAddr string) error {
	var b strings.Builder
	for _, l := range lis {
		fmt.Fprintf(&b, "grpc %s\n", l.Addr())
	}
	if metricsAddr != "" {
		fmt.Fprintf(&b, "metrics %s\n", metricsAddr)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("addr file: %w", err)
	}
	return os.Rename(tmp, path) // readers never see a half-written file
}
