package server

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/metrics"
	"github.com/lookahead-dev/lookahead/internal/metrics/wire"
	"github.com/lookahead-dev/lookahead/internal/near"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/origintest"
	"github.com/lookahead-dev/lookahead/internal/prefetch"
)

// hostileRig is a sidecar in front of an origintest.Origin.
type hostileRig struct {
	client lookaheadv1.SidecarServiceClient
	cc     *grpc.ClientConn
	origin *origintest.Origin
	oc     *origin.Client
	f      *fetch.Fetcher
	m      *metrics.Set
	reg    *prometheus.Registry // the gRPC server metrics and the near hub's
	codec  *RequestCodec
	svc    *Server
	hub    *near.Hub
	dial   func(...grpc.DialOption) *grpc.ClientConn // another client connection
}

func newHostileRig(t *testing.T, o *origintest.Origin, cfg origin.Config) *hostileRig {
	t.Helper()
	return newHostileRigWith(t, o, cfg, Config{})
}

// newHostileRigWith is newHostileRig with the server's limits scfg and
// gRPC server options opts; its sidecar serves Subscribe.
func newHostileRigWith(t testing.TB, o *origintest.Origin, cfg origin.Config, scfg Config, opts ...grpc.ServerOption) *hostileRig {
	t.Helper()
	return newHostileRigCache(t, o, cfg, cache.Config{}, scfg, opts...)
}

// newHostileRigCache is newHostileRigWith with the cache's settings ccfg.
func newHostileRigCache(t testing.TB, o *origintest.Origin, cfg origin.Config, ccfg cache.Config, scfg Config, opts ...grpc.ServerOption) *hostileRig {
	t.Helper()
	m := metrics.New(prometheus.NewRegistry())
	c, err := cache.New(ccfg, wire.Cache(m))
	require.NoError(t, err)
	oc, err := origin.New(o.Start(t), cfg, m)
	require.NoError(t, err)
	f, err := fetch.New(fetch.Config{Metrics: wire.Fetch(m)}, oc, c)
	require.NoError(t, err)
	e, err := prefetch.New(modeOff, f, prefetch.Static{})
	require.NoError(t, err)
	svc, err := New(scfg, f, e, oc, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	hub, err := near.New(near.Config{}, reg)
	require.NoError(t, err)
	svc.EnableNear(hub)
	codec := svc.Codec()
	_, dial := serveDialer(t, func(gs *grpc.Server) { lookaheadv1.RegisterSidecarServiceServer(gs, svc) },
		append(append(Interceptors(metrics.NewGRPCServer(reg)), codec.ServerOptions()...), opts...)...)
	t.Cleanup(func() { e.Close(); c.Close() })
	scc := dial()
	return &hostileRig{client: lookaheadv1.NewSidecarServiceClient(scc), cc: scc, origin: o, oc: oc, f: f, m: m, reg: reg,
		codec: codec, svc: svc, hub: hub, dial: dial}
}

func (r *hostileRig) get(id string) (*lookaheadv1.GetResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return r.client.Get(ctx, &lookaheadv1.GetRequest{Id: id})
}

// TestOmittedIDIsTheOriginsFault: an origin that leaves an asked id out of
// both lists never said the object does not exist.
func TestOmittedIDIsTheOriginsFault(t *testing.T) {
	o := origintest.New(&graph.Object{ID: "a", Version: 1})
	o.Misbehave(origintest.Misbehaviour{Omit: []string{"a"}})
	r := newHostileRig(t, o, origin.Config{})

	_, err := r.get("a")
	assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	assert.Contains(t, status.Convert(err).Message(), `origin reply incomplete: 1 asked id neither sent nor listed missing: "a"`)

	o.Misbehave(origintest.Misbehaviour{})
	resp, err := r.get("a")
	require.NoError(t, err, "the omission was not remembered as an absence")
	assert.Equal(t, "a", resp.GetObject().GetId())
}

// TestOpenBreakerIsUnavailable: an open circuit refuses at once, whatever
// its last failure was; the message says what that failure was.
func TestOpenBreakerIsUnavailable(t *testing.T) {
	o := origintest.New(&graph.Object{ID: "a", Version: 1}, &graph.Object{ID: "b", Version: 1})
	r := newHostileRig(t, o, origin.Config{Timeout: 100 * time.Millisecond, BreakerFailures: 1, BreakerCooldown: time.Hour})
	_, err := r.get("b") // connected
	require.NoError(t, err)
	o.Misbehave(origintest.Misbehaviour{Hang: true})

	_, err = r.get("a")
	require.Equal(t, codes.DeadlineExceeded, status.Code(err), "the origin timed out: %v", err)
	calls := o.Calls("BatchGet")

	_, err = r.get("a")
	assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	assert.Contains(t, status.Convert(err).Message(), "origin circuit open: last failure: ")
	assert.Equal(t, calls, o.Calls("BatchGet"), "refused without a round trip")
}
