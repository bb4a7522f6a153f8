package postgres_test

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/originserver"
	"github.com/lookahead-dev/lookahead/internal/store/postgres"
)

// serve serves st through the reference origin's gRPC service over bufconn.
func serve(t *testing.T, st *postgres.Store) lookaheadv1.OriginServiceClient {
	t.Helper()
	srv, err := originserver.New(st, originserver.Config{}, nil)
	require.NoError(t, err)
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	lookaheadv1.RegisterOriginServiceServer(gs, srv)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Shutdown()
		gs.Stop()
		<-served
	})
	return lookaheadv1.NewOriginServiceClient(conn)
}

func TestExpandWalksTheOrderGraphLevelByLevel(t *testing.T) {
	st, url := openShop(t)
	c := serve(t, st)
	items := queryStrings(t, url, "SELECT 'line_items/' || id FROM line_items WHERE order_id = 2 ORDER BY id")
	products := queryStrings(t, url, "SELECT DISTINCT 'products/' || product_id FROM line_items WHERE order_id = 2")

	stream, err := c.Expand(testCtx(t), &lookaheadv1.ExpandRequest{
		Roots: []string{"orders/2"}, Depth: 2, Fields: []string{"customer", "line_items", "product"},
		KnownIds: []string{"customers/2"},
	})
	require.NoError(t, err)
	levels := map[uint32][]string{}
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		for _, o := range m.GetObjects() {
			levels[m.GetLevel()] = append(levels[m.GetLevel()], o.GetId())
		}
	}
	assert.Equal(t, []string{"orders/2"}, levels[0])
	assert.Equal(t, items, levels[1], "the known customer is walked through but not sent")
	assert.ElementsMatch(t, products, levels[2], "customer 2's orders are not followed: not in fields")
}

func TestExpandHonoursMaxObjects(t *testing.T) {
	st, _ := openShop(t)
	c := serve(t, st)
	stream, err := c.Expand(testCtx(t), &lookaheadv1.ExpandRequest{Roots: []string{"customers/1"}, Depth: 5, MaxObjects: 3})
	require.NoError(t, err)
	n := 0
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		n += len(m.GetObjects())
	}
	assert.Equal(t, 3, n)
}

func TestServerStatusCodes(t *testing.T) {
	st, url := openShop(t)
	c := serve(t, st)
	ctx := testCtx(t)

	_, err := c.Put(ctx, &lookaheadv1.OriginServicePutRequest{Object: &lookaheadv1.Object{Id: "products/1"}})
	assert.Equal(t, codes.Unimplemented, status.Code(err), "read-only type: %v", err)
	_, err = c.Put(ctx, &lookaheadv1.OriginServicePutRequest{Object: &lookaheadv1.Object{Id: "customers/1", Payload: []byte(`{"nick":1}`)}})
	assert.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	v := uint64(7)
	_, err = c.Put(ctx, &lookaheadv1.OriginServicePutRequest{Object: &lookaheadv1.Object{Id: "customers/1", Payload: []byte(`{"name":"a","email":"b"}`)}, ExpectedVersion: &v})
	assert.Equal(t, codes.FailedPrecondition, status.Code(err), "%v", err)

	exec(t, url, "UPDATE products SET price_cents = 5")
	awaitRevision(t, st, 4)
	_, err = st.Compact(3)
	require.NoError(t, err)
	from := uint64(1)
	w, err := c.Watch(ctx, &lookaheadv1.WatchRequest{FromRevision: &from})
	require.NoError(t, err)
	_, err = w.Recv()
	assert.Equal(t, codes.OutOfRange, status.Code(err), "resume before the compaction mark: %v", err)
	from = 3
	w, err = c.Watch(ctx, &lookaheadv1.WatchRequest{FromRevision: &from})
	require.NoError(t, err)
	m, err := w.Recv()
	require.NoError(t, err)
	require.Len(t, m.GetChanges(), 1)
	assert.Equal(t, uint64(4), m.GetChanges()[0].GetRevision())
}
