package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/metrics"
	"github.com/lookahead-dev/lookahead/internal/metrics/wire"
	"github.com/lookahead-dev/lookahead/internal/near"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/originserver"
	"github.com/lookahead-dev/lookahead/internal/prefetch"
	"github.com/lookahead-dev/lookahead/internal/store"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(floodEnv); spec != "" { // a flooding client of BenchmarkHitDuringFlood
		os.Exit(floodFrom(spec))
	}
	if spec := os.Getenv(hitsEnv); spec != "" { // its hits' client
		os.Exit(hitsFrom(spec))
	}
	goleak.VerifyTestMain(m)
}

// rig is a sidecar and the reference origin on a real bbolt store, each on
// its own in-memory listener.
type rig struct {
	client     lookaheadv1.SidecarServiceClient
	dial       func(...grpc.DialOption) *grpc.ClientConn // another connection to the sidecar
	hub        *near.Hub
	m          *metrics.Set
	reg        *prometheus.Registry // m's and the gRPC server metrics
	originGRPC *grpc.Server
	origin     lookaheadv1.OriginServiceClient // the origin, bypassing the sidecar
	cache      *cache.Cache
	svc        *Server
}

type rigOptions struct {
	origin  originserver.Config
	server  Config
	planner prefetch.Static
	engine  prefetch.Config
	near    near.Config
	wrap    func(Scheduler) Scheduler // around the scheduler, for tests that watch it
}

func serve(t testing.TB, register func(*grpc.Server), opts ...grpc.ServerOption) (*grpc.Server, *grpc.ClientConn) {
	t.Helper()
	gs, dial := serveDialer(t, register, opts...)
	return gs, dial()
}

// serveDialer serves register's services on an in-memory listener and
// returns a function that opens another client connection to them.
func serveDialer(t testing.TB, register func(*grpc.Server), opts ...grpc.ServerOption) (*grpc.Server, func(...grpc.DialOption) *grpc.ClientConn) {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer(opts...)
	register(gs)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return gs, func(dopts ...grpc.DialOption) *grpc.ClientConn {
		cc, err := grpc.NewClient("passthrough:///bufnet", append([]grpc.DialOption{
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
			grpc.WithTransportCredentials(insecure.NewCredentials())}, dopts...)...)
		require.NoError(t, err)
		t.Cleanup(func() { cc.Close() })
		return cc
	}
}

func newRig(t testing.TB, objs []*graph.Object, o rigOptions) *rig {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "origin.db"), store.Config{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	_, err = st.Load(func(emit graph.EmitFunc) error {
		for _, ob := range objs {
			if err := emit(ob); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	osrv, err := originserver.New(st, o.origin, prometheus.NewRegistry())
	require.NoError(t, err)
	ogs, occ := serve(t, func(gs *grpc.Server) { lookaheadv1.RegisterOriginServiceServer(gs, osrv) })
	t.Cleanup(osrv.Shutdown)

	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	c, err := cache.New(cache.Config{}, wire.Cache(m))
	require.NoError(t, err)
	oc, err := origin.New(occ, origin.Config{}, m)
	require.NoError(t, err)
	hub, err := near.New(o.near, reg)
	require.NoError(t, err)
	t.Cleanup(hub.Close)
	f, err := fetch.New(fetch.Config{Metrics: wire.Fetch(m), Speculative: origin.Speculative}, hub.Fetching(oc), c)
	require.NoError(t, err)
	o.engine.Metrics = wire.Prefetch(m)
	e, err := prefetch.New(o.engine, f, o.planner)
	require.NoError(t, err)
	var sched Scheduler = e
	if o.wrap != nil {
		sched = o.wrap(e)
	}
	svc, err := New(o.server, hub.Fetcher(f), sched, oc, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	svc.EnableNear(hub)
	gm := metrics.NewGRPCServer(reg)
	_, dial := serveDialer(t, func(gs *grpc.Server) { lookaheadv1.RegisterSidecarServiceServer(gs, svc) },
		append(append(Interceptors(gm), svc.Codec().ServerOptions()...), grpc.Creds(svc.Credentials(insecure.NewCredentials())))...)
	t.Cleanup(func() { e.Close(); c.Close() })
	return &rig{client: lookaheadv1.NewSidecarServiceClient(dial()), dial: dial, hub: hub, m: m, reg: reg, originGRPC: ogs,
		origin: lookaheadv1.NewOriginServiceClient(occ), cache: c, svc: svc}
}

func taskTree(t testing.TB, roots, fanout, levels int) []*graph.Object {
	t.Helper()
	var objs []*graph.Object
	require.NoError(t, graph.TaskTrees{Roots: roots, Fanout: fanout, Levels: levels, PayloadBytes: 8}.Generate(func(o *graph.Object) error {
		objs = append(objs, o)
		return nil
	}))
	return objs
}

var modeOff = prefetch.Config{Mode: prefetch.ModeOff}

// handled is grpc_server_handled_total of method and code in reg.
func handled(t *testing.T, reg prometheus.Gatherer, method string, code codes.Code) float64 {
	t.Helper()
	fams, err := reg.Gather()
	require.NoError(t, err)
	var n float64
	for _, f := range fams {
		if f.GetName() != "grpc_server_handled_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["grpc_method"] == method && labels["grpc_code"] == code.String() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}
