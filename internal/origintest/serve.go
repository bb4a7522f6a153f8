package origintest

import (
	"context"
	"net"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/test/bufconn"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/origin"
)

// T is what Start and StartTCP need of a test: *testing.T, *testing.B
// and Ginkgo's GinkgoT() all have it.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Register adds the origin service and its grpc.health service to gs.
func (o *Origin) Register(gs *grpc.Server) {
	lookaheadv1.RegisterOriginServiceServer(gs, o)
	healthpb.RegisterHealthServer(gs, o.health)
}

// Start serves the origin on an in-memory listener until the test ends and
// returns a connection to it, made with dopts (plaintext is added).
func (o *Origin) Start(t T, dopts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	o.serve(t, lis)
	cc, err := grpc.NewClient("passthrough:///origintest", append([]grpc.DialOption{
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
	}, dopts...)...)
	if err != nil {
		t.Fatalf("origintest: dial: %v", err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// StartTCP serves the origin on 127.0.0.1 until the test ends and returns
// its address, for a real sidecar binary.
func (o *Origin) StartTCP(t T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("origintest: listen: %v", err)
	}
	o.serve(t, lis)
	return lis.Addr().String()
}

// serve serves the origin on lis until the test ends; the cleanup waits for
// its handlers too, so that a test's leak check never finds one still
// sending a large level to a client that went away.
func (o *Origin) serve(t T, lis net.Listener) {
	gs := grpc.NewServer(grpc.WaitForHandlers(true), origin.PermitKeepalive())
	o.Register(gs)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gs.Serve(o.conns.track(lis))
	}()
	t.Cleanup(func() {
		gs.Stop()
		<-done
	})
}

// Reset cuts every connection open to the origin, as a network reset
// would: calls under way fail UNAVAILABLE; clients reconnect.
func (o *Origin) Reset() { o.conns.closeAll() }

// connSet remembers the connections a listener accepted.
type connSet struct {
	mu    sync.Mutex // protects conns
	conns map[net.Conn]struct{}
}

func newConnSet() *connSet { return &connSet{conns: map[net.Conn]struct{}{}} }

func (s *connSet) track(l net.Listener) net.Listener { return trackingListener{l, s} }

func (s *connSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = c.Close()
		delete(s.conns, c)
	}
}

type trackingListener struct {
	net.Listener
	set *connSet
}

func (l trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.set.mu.Lock()
		l.set.conns[c] = struct{}{}
		l.set.mu.Unlock()
	}
	return c, err
}
