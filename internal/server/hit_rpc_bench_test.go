package server

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// BenchmarkHitRPC is a Get that hits, over gRPC on an in-memory
// connection, with prefetching off: what every request pays before
// speculation, the gRPC layer, the interceptors and the connection's
// prefetch.Client included. Client and server run in this process, so
// allocs/op counts both sides.
func BenchmarkHitRPC(b *testing.B) {
	r := newRig(b, taskTree(b, 1, 2, 2), rigOptions{engine: modeOff})
	req := &lookaheadv1.GetRequest{Id: "task-0"}
	_, err := r.client.Get(context.Background(), req) // cached from now on
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.client.Get(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
