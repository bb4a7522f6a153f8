package originserver

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// harness is an origin server over a fresh store, reached through bufconn.
type harness struct {
	st     *store.Store
	srv    *Server
	reg    *prometheus.Registry
	client lookaheadv1.OriginServiceClient
}

// newHarness serves objs (loaded with their own versions) with cfg.
func newHarness(t *testing.T, cfg Config, objs ...*graph.Object) *harness {
	t.Helper()
	return newHarnessWait(t, cfg, nil, objs...)
}

// newHarnessWait is newHarness with the server's latency wait replaced by
// wait, when not nil.
func newHarnessWait(t *testing.T, cfg Config, wait func(context.Context, time.Duration) error, objs ...*graph.Object) *harness {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "origin.db"), store.Config{})
	require.NoError(t, err)
	_, err = st.Load(func(emit graph.EmitFunc) error {
		for _, o := range objs {
			if err := emit(o); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	srv, err := New(st, cfg, reg)
	require.NoError(t, err)
	if wait != nil {
		srv.wait = wait
	}

	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	lookaheadv1.RegisterOriginServiceServer(gs, srv)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)),
	)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Shutdown()
		gs.Stop()
		<-served
		_ = st.Close()
	})
	return &harness{st: st, srv: srv, reg: reg, client: lookaheadv1.NewOriginServiceClient(conn)}
}

// testCtx bounds a test's calls so that a bug hangs nothing for long; no
// test asserts on timing.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// node builds an object whose refs alternate field, id, field, id...
func node(id string, fieldIDs ...string) *graph.Object {
	o := &graph.Object{ID: id, Version: 1, Type: "Node", Payload: []byte("p-" + id)}
	for i := 0; i+1 < len(fieldIDs); i += 2 {
		o.Refs = append(o.Refs, graph.Ref{Field: fieldIDs[i], ID: fieldIDs[i+1]})
	}
	return o
}

func recvAll[T any](t *testing.T, s grpc.ServerStreamingClient[T]) ([]*T, error) {
	t.Helper()
	var out []*T
	for {
		m, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
}

// fakeStream is a server stream without a network, for calling stream
// handlers directly. Unused grpc.ServerStream methods panic.
type fakeStream[T any] struct {
	grpc.ServerStream
	ctx    context.Context
	sent   []*T
	onSend func(*T) error
}

func (f *fakeStream[T]) Context() context.Context { return f.ctx }

func (f *fakeStream[T]) SendHeader(metadata.MD) error { return nil }

func (f *fakeStream[T]) Send(m *T) error {
	f.sent = append(f.sent, m)
	if f.onSend != nil {
		return f.onSend(m)
	}
	return nil
}

// value reads a counter or gauge.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	require.NoError(t, m.Write(&d))
	if d.Counter != nil {
		return d.GetCounter().GetValue()
	}
	return d.GetGauge().GetValue()
}
