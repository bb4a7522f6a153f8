package origin_test

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/metrics"
	"github.com/lookahead-dev/lookahead/internal/origin"
)

// paddedOrigin answers BatchGet with headers of pad bytes.
type paddedOrigin struct {
	lookaheadv1.UnimplementedOriginServiceServer
	pad int
}

func (p paddedOrigin) BatchGet(ctx context.Context, req *lookaheadv1.OriginServiceBatchGetRequest) (*lookaheadv1.OriginServiceBatchGetResponse, error) {
	if err := grpc.SetHeader(ctx, metadata.Pairs("x-padding", strings.Repeat("p", p.pad))); err != nil {
		return nil, err
	}
	return &lookaheadv1.OriginServiceBatchGetResponse{MissingIds: req.GetIds()}, nil
}

// TestOriginHeadersAreBounded: an origin whose reply carries more than
// origin.MaxHeaderBytes of metadata fails the call INTERNAL instead of
// having the sidecar hold it (a gRPC origin reads the bound from the
// connection's settings and resets the stream; one that ignores it has its
// headers cut by the sidecar's gRPC); one within the bound is answered.
func TestOriginHeadersAreBounded(t *testing.T) {
	for _, tt := range []struct {
		pad  int
		want codes.Code
	}{{pad: 4 << 10, want: codes.OK}, {pad: 2 * origin.MaxHeaderBytes, want: codes.Internal}} {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		gs := grpc.NewServer()
		lookaheadv1.RegisterOriginServiceServer(gs, paddedOrigin{pad: tt.pad})
		go func() { _ = gs.Serve(lis) }()
		cc, err := origin.Dial(lis.Addr().String(), origin.DialConfig{})
		require.NoError(t, err)
		c, err := origin.New(cc, origin.Config{Retries: -1}, metrics.New(prometheus.NewRegistry()))
		require.NoError(t, err)
		_, missing, err := c.BatchGet(context.Background(), []string{"a"})
		assert.Equal(t, tt.want, status.Code(err), "%v", err)
		if tt.want == codes.OK {
			assert.Equal(t, []string{"a"}, missing)
		}
		cc.Close()
		gs.Stop()
	}
}
