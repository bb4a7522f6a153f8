// Command origin runs lookahead's reference origin: the OriginService over an
// embedded store, with dataset generators and artificial latency for
// experiments.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/bufpool"
	"github.com/lookahead-dev/lookahead/internal/buildinfo"
	"github.com/lookahead-dev/lookahead/internal/flagconf"
	"github.com/lookahead-dev/lookahead/internal/metrics"
	originclient "github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/originserver"
	"github.com/lookahead-dev/lookahead/internal/tlsconfig"
	"github.com/lookahead-dev/lookahead/internal/tracing"
)

// Every gRPC buffer of the process, those of the proto codec included, comes
// from a pool that does not clear what it hands out (see internal/bufpool).
func init() { experimental.SetDefaultBufferPool(new(bufpool.Pool)) }

type options struct {
	cmd                                                flagconf.Command // --config, --check-config, --version, --log-level
	listen, metricsListen, dataDir, addrFile, loadPath string
	seed                                               string
	reseed                                             bool
	tasks                                              taskOptions
	random                                             randomOptions
	social                                             socialOptions
	server                                             originserver.Config
	drainTimeout                                       time.Duration
	// keepaliveTime and keepaliveTimeout: a client connection (a sidecar's)
	// silent for keepaliveTime is pinged, and cut when it does not answer
	// within keepaliveTimeout, as is one whose handshake takes longer.
	keepaliveTime, keepaliveTimeout time.Duration
	tlsFiles                        tlsconfig.Server
	tls                             *tls.Config // loaded from tlsFiles; nil = plaintext
	pg                              pgOptions
	registry                        registry // nil: a new prometheus.Registry; tests pass one that records
	tracing                         tracing.Config
}

// registry is where run registers every collector, and what /metrics serves.
type registry interface {
	prometheus.Registerer
	prometheus.Gatherer
}

func parseFlags(args []string) (*options, error) {
	o := &options{cmd: flagconf.Command{Name: "origin"}}
	fs := flag.NewFlagSet("origin", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: origin [flags]\n\nServes lookahead's OriginService over an embedded bbolt store or a PostgreSQL schema.\n       origin postgres-introspect|postgres-install -h\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.listen, "listen", "127.0.0.1:7071", "gRPC listen address; port 0 picks a free port (see -addr-file)")
	fs.StringVar(&o.metricsListen, "metrics-listen", "127.0.0.1:7073", "HTTP address for /metrics; empty disables")
	fs.StringVar(&o.dataDir, "data", "./data/origin", "directory of the store; the file is origin.db inside, created if needed")
	o.pg.flags(fs)
	fs.StringVar(&o.addrFile, "addr-file", "", `once serving (store open and seeded), write "grpc ADDR" and "metrics ADDR" lines to this file`)
	fs.StringVar(&o.seed, "seed", "none", "dataset to generate into an empty store: none, tasks, random or social")
	fs.BoolVar(&o.reseed, "reseed", false, "seed and -load even when the store is not empty (same ids get a new version)")
	fs.IntVar(&o.tasks.roots, "task-roots", 500, "tasks dataset: independent task trees")
	fs.IntVar(&o.tasks.fanout, "task-fanout", 5, "tasks dataset: subtasks per task")
	fs.IntVar(&o.tasks.levels, "task-levels", 5, "tasks dataset: levels per tree (5 levels of 5 make 781 tasks)")
	fs.IntVar(&o.tasks.payloadBytes, "payload-bytes", 10, "payload bytes of each generated object (db4o's RESULT-sized payloads)")
	fs.IntVar(&o.random.nodes, "random-nodes", 10000, "random dataset: objects")
	fs.IntVar(&o.random.refs, "random-refs", 3, "random dataset: refs per object, on average")
	fs.Float64Var(&o.random.dangling, "random-dangling", 0.01, "random dataset: fraction of refs to objects that do not exist")
	fs.IntVar(&o.social.users, "social-users", 10000, "social dataset: users (with posts, comments and products, about 9 objects per user)")
	fs.IntVar(&o.social.maxFriends, "social-max-friends", 3000, "social dataset: most friends of one user (friend counts follow a power law)")
	fs.Float64Var(&o.social.dangling, "social-dangling", 0.001, "social dataset: chance that a friend or like ref is followed by a ref to a deleted object")
	fs.Uint64Var(&o.tasks.seed, "dataset-seed", 1, "random number seed of the generated datasets")
	fs.StringVar(&o.loadPath, "load", "", `NDJSON file to load into an empty store, one object per line: {"id":..,"version":..,"type":..,"refs":[{"field":..,"id":..}],"payload":base64} ("payload_text":string instead of "payload" for text)`)
	fs.DurationVar(&o.server.Latency, "latency", 0, "artificial delay of every reply and of each stream's first message")
	fs.IntVar(&o.server.MaxIDs, "max-ids", 10000, "ids per BatchGet, and roots and known ids per Expand")
	fs.IntVar(&o.server.MaxDepth, "max-depth", 64, "largest depth an Expand may ask for")
	fs.IntVar(&o.server.MaxObjects, "max-objects", 1000000, "largest max_objects an Expand may ask for, and the cap of one that sets none")
	fs.IntVar(&o.server.ShedSpeculativeAbove, "shed-speculative-above", 0, "refuse a speculative call (metadata lookahead-speculative: 1) RESOURCE_EXHAUSTED when it would make more than this many calls in flight; calls without the mark are always served; 0 = never shed")
	fs.StringVar(&o.tlsFiles.CertFile, "tls-cert", "", "serve TLS with this certificate chain (PEM); needs --tls-key; empty = plaintext")
	fs.StringVar(&o.tlsFiles.KeyFile, "tls-key", "", "private key (PEM) of --tls-cert")
	fs.StringVar(&o.tlsFiles.ClientCAFile, "tls-client-ca", "", "require client certificates signed by these CAs (PEM): mutual TLS; needs --tls-cert")
	fs.DurationVar(&o.drainTimeout, "drain-timeout", 10*time.Second, "graceful stop limit before in-flight requests are cut")
	fs.DurationVar(&o.keepaliveTime, "keepalive-time", 30*time.Second, "how long a client connection may be silent before the origin pings it; one that does not answer within --keepalive-timeout is cut, and its calls (a sidecar's change stream) end")
	fs.DurationVar(&o.keepaliveTimeout, "keepalive-timeout", 10*time.Second, "how long a pinged client connection has to answer before the origin cuts it, and a new one to finish its handshake (TLS, HTTP/2) before it is closed")
	o.cmd.Register(fs)
	fs.StringVar(&o.tracing.Endpoint, "otlp-endpoint", "", "send OpenTelemetry traces of every request, continuing the caller's trace, to this OTLP/gRPC collector: http://host:4317 (plaintext) or https://…; empty = no tracing")
	if err := o.cmd.Parse(fs, args); err != nil || o.cmd.Version {
		return o, err
	}
	if err := o.finish(); err != nil {
		return o, err
	}
	o.cmd.Record(fs)
	return o, nil
}

func main() {
	os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr))
}

// cli runs the command with args and returns its exit status: 2 for a bad
// setting, 1 when the origin stopped on an error.
func cli(args []string, stdout, stderr io.Writer) int {
	if status, ok := postgresCommand(args, stdout, stderr); ok {
		return status
	}
	o, err := parseFlags(args)
	return o.cmd.Run(stdout, stderr, err, func(ctx context.Context, log *slog.Logger) error { return run(ctx, o, log) })
}

// run wires the pieces, serves until ctx ends and shuts down in reverse order.
func run(ctx context.Context, o *options, log *slog.Logger) (err error) {
	st, err := openStore(ctx, o, log)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	empty := false
	if st.bolt != nil {
		if empty, err = st.bolt.Empty(); err != nil {
			return err
		}
		log.Info("store open", "path", filepath.Join(o.dataDir, "origin.db"), "revision", st.Revision(), "empty", empty)
	}

	reg := o.registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	buildinfo.Get().Register(reg)
	svc, err := originserver.New(st.served(), o.server, reg)
	if err != nil {
		return fmt.Errorf("server config: %w", err)
	}
	sopts := []grpc.ServerOption{grpc.MaxRecvMsgSize(64 << 20), originclient.PermitKeepalive(),
		// gRPC's own pings a silent client after two hours: a sidecar gone
		// without closing its connection (its node lost) would hold its
		// change stream till then, one per pod that ever ran.
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: o.keepaliveTime, Timeout: o.keepaliveTimeout}),
		grpc.ConnectionTimeout(o.keepaliveTimeout)}
	// Certificates, key and client CAs re-read from their files: rotated
	// ones serve new handshakes without a restart.
	watched, err := o.tlsFiles.Watch(0)
	if err != nil {
		return fmt.Errorf("-tls-cert, -tls-key, -tls-client-ca: %w", err)
	}
	defer watched.Close()
	if watched != nil {
		sopts = append(sopts, grpc.Creds(credentials.NewTLS(watched.Config)))
	}
	o.tracing.Service = "lookahead-origin"
	tr, err := tracing.New(ctx, o.tracing)
	if err != nil {
		return err
	}
	defer tr.Stop(log)
	gm := metrics.NewGRPCServer(reg)
	sopts = append(sopts, grpc.ChainUnaryInterceptor(gm.UnaryServerInterceptor()), grpc.ChainStreamInterceptor(gm.StreamServerInterceptor()))
	sopts = append(sopts, tr.ServerOptions()...)
	gs := grpc.NewServer(sopts...)
	lookaheadv1.RegisterOriginServiceServer(gs, svc)
	hs := health.NewServer()
	for _, name := range []string{"", lookaheadv1.OriginService_ServiceDesc.ServiceName} {
		hs.SetServingStatus(name, healthpb.HealthCheckResponse_NOT_SERVING)
	}
	healthpb.RegisterHealthServer(gs, hs)
	reflection.Register(gs)
	gm.InitializeMetrics(gs)

	lis, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", o.listen, err)
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- gs.Serve(lis) }()
	log.Info("listening", "addr", lis.Addr().String(), "latency", o.server.Latency.String())

	var hsrv *http.Server
	var metricsAddr string
	if o.metricsListen != "" {
		ml, err := net.Listen("tcp", o.metricsListen)
		if err != nil {
			gs.Stop()
			return fmt.Errorf("listen %s: %w", o.metricsListen, err)
		}
		metricsAddr = ml.Addr().String()
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
		hsrv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := hsrv.Serve(ml); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics server", "err", err)
			}
		}()
		log.Info("metrics listening", "addr", metricsAddr)
	}

	var runErr error
	if st.bolt != nil && (empty || o.reseed) {
		runErr = seed(ctx, st.bolt, o, log)
	} else if o.seed != "none" || o.loadPath != "" {
		log.Info("store not empty: not seeding (use -reseed to seed anyway)", "seed", o.seed, "load", o.loadPath)
	}
	if runErr == nil && ctx.Err() == nil {
		for _, name := range []string{"", lookaheadv1.OriginService_ServiceDesc.ServiceName} {
			hs.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
		}
		log.Info("serving", "addr", lis.Addr().String(), "metrics", metricsAddr, "revision", st.Revision(), "encoded_reads", svc.EncodedReads())
		if o.addrFile != "" {
			runErr = writeAddrs(o.addrFile, lis.Addr().String(), metricsAddr)
		}
	}
	if runErr == nil {
		select {
		case <-ctx.Done():
		case runErr = <-serveErr:
		}
	}

	log.Info("shutting down", "drain_timeout", o.drainTimeout.String())
	hs.Shutdown()  // NOT_SERVING: load balancers and probes stop sending
	svc.Shutdown() // ends Watch streams, which never end on their own
	stopped := make(chan struct{})
	go func() { gs.GracefulStop(); close(stopped) }()
	drain := time.NewTimer(o.drainTimeout)
	defer drain.Stop()
	select {
	case <-stopped:
	case <-drain.C:
		log.Warn("drain timeout: cutting in-flight requests")
		gs.Stop()
		<-stopped
	}
	if hsrv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = hsrv.Shutdown(sctx)
	}
	return runErr
}

// writeAddrs records where the origin listens, in the sidecar's -addr-file
// format: "grpc ADDR", then "metrics ADDR" when metrics are served.
func writeAddrs(path, grpcAddr, metricsAddr string) error {
	b := fmt.Sprintf("grpc %s\n", grpcAddr)
	if metricsAddr != "" {
		b += fmt.Sprintf("metrics %s\n", metricsAddr)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b), 0o644); err != nil {
		return fmt.Errorf("addr file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil { // readers never see a half-written file
		return fmt.Errorf("addr file: %w", err)
	}
	return nil
}
