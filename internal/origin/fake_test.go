package origin_test

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/test/bufconn"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/metrics"
	"github.com/lookahead-dev/lookahead/internal/origin"
)

// fakeOrigin is an OriginService that answers what its script says: a
// malformed reply, an error, whatever a test needs. It counts calls.
type fakeOrigin struct {
	lookaheadv1.UnimplementedOriginServiceServer

	mu       sync.Mutex // protects the fields below
	batchGet func(n int, req *lookaheadv1.OriginServiceBatchGetRequest) (*lookaheadv1.OriginServiceBatchGetResponse, error)
	expand   func(n int, req *lookaheadv1.ExpandRequest, send func(*lookaheadv1.ExpandResponse) error) error
	put      func(n int, req *lookaheadv1.OriginServicePutRequest) (*lookaheadv1.OriginServicePutResponse, error)
	calls    map[string]int
}

func (f *fakeOrigin) count(rpc string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[rpc]++
	return f.calls[rpc]
}

func (f *fakeOrigin) Calls(rpc string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[rpc]
}

func (f *fakeOrigin) BatchGet(_ context.Context, req *lookaheadv1.OriginServiceBatchGetRequest) (*lookaheadv1.OriginServiceBatchGetResponse, error) {
	return f.batchGet(f.count("BatchGet"), req)
}

func (f *fakeOrigin) Expand(req *lookaheadv1.ExpandRequest, stream grpc.ServerStreamingServer[lookaheadv1.ExpandResponse]) error {
	n := f.count("Expand")
	if f.expand == nil {
		return f.UnimplementedOriginServiceServer.Expand(req, stream)
	}
	return f.expand(n, req, stream.Send)
}

func (f *fakeOrigin) Put(_ context.Context, req *lookaheadv1.OriginServicePutRequest) (*lookaheadv1.OriginServicePutResponse, error) {
	return f.put(f.count("Put"), req)
}

// rig is an origin client talking to a fake origin over an in-memory
// connection.
type rig struct {
	fake   *fakeOrigin
	client *origin.Client
	m      *metrics.Set
	lis    *bufconn.Listener
	gs     *grpc.Server
}

func newRig(t *testing.T, f *fakeOrigin, cfg origin.Config) *rig {
	t.Helper()
	r := newRigWith(t, f, cfg, nil)
	r.fake = f
	return r
}

// newRigWith serves srv, and grpc.health.v1 set up by withHealth when it
// is not nil.
func newRigWith(t *testing.T, srv lookaheadv1.OriginServiceServer, cfg origin.Config, withHealth func(*health.Server)) *rig {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	lookaheadv1.RegisterOriginServiceServer(gs, srv)
	if withHealth != nil {
		hs := health.NewServer()
		withHealth(hs)
		healthpb.RegisterHealthServer(gs, hs)
	}
	go func() { _ = gs.Serve(lis) }()
	cc, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { cc.Close(); gs.Stop() })
	m := metrics.New(prometheus.NewRegistry())
	c, err := origin.New(cc, cfg, m)
	require.NoError(t, err)
	return &rig{client: c, m: m, lis: lis, gs: gs}
}
