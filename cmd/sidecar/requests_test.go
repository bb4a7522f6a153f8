package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

// TestRequestsLargerThanAnyValidOneAreNotRead: with --max-ids 10 and
// --max-object-bytes 4KiB no request the sidecar answers takes more than
// about 85 KB, so a 200 KB one (--max-message-bytes allows 64 MiB) is
// refused RESOURCE_EXHAUSTED from its length prefix, before it is read; and
// a request whose metadata is larger than 64 KiB is refused before it is
// sent. Requests within the limits on the same connection are served.
func TestRequestsLargerThanAnyValidOneAreNotRead(t *testing.T) {
	o := origintest.New(&graph.Object{ID: "a", Version: 1})
	addr, _ := startSidecar(t, "--origin", o.StartTCP(t), "--max-ids", "10", "--max-object-bytes", "4KiB")
	c := dialSidecar(t, addr)
	ctx := context.Background()
	_, err := c.Get(ctx, &lookaheadv1.GetRequest{Id: "a"})
	require.NoError(t, err)

	_, err = c.BatchGet(ctx, &lookaheadv1.BatchGetRequest{Ids: []string{"a", strings.Repeat("x", 200<<10)}})
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	assert.Contains(t, status.Convert(err).Message(), "received message larger than max")

	big := metadata.AppendToOutgoingContext(ctx, "x-padding", strings.Repeat("p", 100<<10))
	_, err = c.Get(big, &lookaheadv1.GetRequest{Id: "a"})
	assert.Contains(t, []codes.Code{codes.Internal, codes.ResourceExhausted}, status.Code(err), "%v", err)
	assert.Contains(t, status.Convert(err).Message(), "header list size")

	_, err = c.Get(ctx, &lookaheadv1.GetRequest{Id: "a"})
	require.NoError(t, err, "the connection still serves")
}
