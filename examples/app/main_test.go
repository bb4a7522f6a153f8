package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeSidecar answers GetGraph with two chunks and records the request.
type fakeSidecar struct {
	lookaheadv1.UnimplementedSidecarServiceServer
	got chan *lookaheadv1.GetGraphRequest
}

func (f *fakeSidecar) GetGraph(req *lookaheadv1.GetGraphRequest, stream grpc.ServerStreamingServer[lookaheadv1.GetGraphResponse]) error {
	f.got <- req
	chunks := []*lookaheadv1.GetGraphResponse{
		{Results: []*lookaheadv1.Result{{Object: &lookaheadv1.Object{Id: req.GetRoots()[0]}, Status: lookaheadv1.CacheStatus_CACHE_STATUS_HIT}}},
		{
			Results:    []*lookaheadv1.Result{{Object: &lookaheadv1.Object{Id: "b"}, Status: lookaheadv1.CacheStatus_CACHE_STATUS_MISS, Level: 1}},
			MissingIds: []string{"c"},
		},
	}
	for _, c := range chunks {
		if err := stream.Send(c); err != nil {
			return err
		}
	}
	return nil
}

func TestGraph(t *testing.T) {
	lis := bufconn.Listen(1 << 20)
	fake := &fakeSidecar{got: make(chan *lookaheadv1.GetGraphRequest, 1)}
	gs := grpc.NewServer()
	lookaheadv1.RegisterSidecarServiceServer(gs, fake)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	t.Cleanup(func() {
		gs.Stop()
		<-served
	})
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	sidecar := lookaheadv1.NewSidecarServiceClient(conn)

	tests := []struct {
		name      string
		query     string
		wantCode  int
		wantBody  string
		wantDepth uint32 // of the GetGraph request; 0 = none made
	}{
		{name: "default depth", query: "root=a", wantCode: http.StatusOK, wantBody: "0 a CACHE_STATUS_HIT\n1 b CACHE_STATUS_MISS\nmissing c\n", wantDepth: 2},
		{name: "depth", query: "root=a&depth=1", wantCode: http.StatusOK, wantBody: "0 a CACHE_STATUS_HIT\n1 b CACHE_STATUS_MISS\nmissing c\n", wantDepth: 1},
		{name: "no root", query: "", wantCode: http.StatusBadRequest, wantBody: "root: missing\n"},
		{name: "bad depth", query: "root=a&depth=x", wantCode: http.StatusBadRequest, wantBody: "depth: strconv.ParseUint: parsing \"x\": invalid syntax\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			graph(rec, httptest.NewRequest(http.MethodGet, "/graph?"+tc.query, nil), sidecar)
			assert.Equal(t, tc.wantCode, rec.Code)
			assert.Equal(t, tc.wantBody, rec.Body.String())
			if tc.wantDepth == 0 {
				assert.Empty(t, fake.got, "no GetGraph for a bad request")
				return
			}
			req := <-fake.got
			assert.Equal(t, []string{"a"}, req.GetRoots())
			assert.Equal(t, tc.wantDepth, req.GetDepth())
		})
	}
}
