package server

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// bigObjects are n objects of payload bytes each, "big-0" on.
func bigObjects(n, payload int) (objs []*graph.Object, ids []string) {
	for i := range n {
		id := fmt.Sprintf("big-%d", i)
		objs = append(objs, &graph.Object{ID: id, Version: 1, Payload: make([]byte, payload)})
		ids = append(ids, id)
	}
	return objs, ids
}

// A reply goes to gRPC as the bytes it was encoded in, which decode to
// the reply the handler meant, and holds its bytes of the reply budget
// until gRPC frees them, having written them; a reply of at most 1 KiB
// holds nothing.
func TestReplyHoldsItsBytesUntilGRPCHasWrittenThem(t *testing.T) {
	r := newRig(t, nil, rigOptions{engine: modeOff})
	codec := r.svc.Codec()
	big := &graph.Object{ID: "a", Type: "task", Version: 3, Payload: make([]byte, 4<<10), Refs: []graph.Ref{{Field: "next", ID: "b"}}}
	rs := []fetch.Result{{Object: big, Status: fetch.StatusHitPrefetched, Stale: true}}

	msg := &lookaheadv1.BatchGetResponse{}
	e := resultsReply(batchResults, rs, []string{"gone"})
	size := e.size
	require.NoError(t, r.svc.reply(context.Background(), msg, e))
	assert.Equal(t, int64(size), r.svc.StreamMemory(), "held from its encoding")
	got, err := codec.Marshal(msg)
	require.NoError(t, err)
	raw := msg.ProtoReflect().GetUnknown()
	require.Len(t, got, 1)
	assert.Same(t, &raw[0], &got[0].ReadOnlyData()[0], "the reply's own bytes, not a copy")
	var decoded lookaheadv1.BatchGetResponse
	require.NoError(t, proto.Unmarshal(got.Materialize(), &decoded))
	require.Len(t, decoded.GetResults(), 1)
	res := decoded.GetResults()[0]
	assert.Equal(t, "a", res.GetObject().GetId())
	assert.Equal(t, uint64(3), res.GetObject().GetVersion())
	assert.Equal(t, "b", res.GetObject().GetRefs()[0].GetId())
	assert.Len(t, res.GetObject().GetPayload(), 4<<10)
	assert.Equal(t, lookaheadv1.CacheStatus_CACHE_STATUS_HIT_PREFETCHED, res.GetStatus())
	assert.True(t, res.GetStale())
	assert.Equal(t, []string{"gone"}, decoded.GetMissingIds())
	assert.Equal(t, int64(size), r.svc.StreamMemory(), "held while gRPC has the bytes")
	got.Free() // gRPC has written them
	assert.Zero(t, r.svc.StreamMemory())

	small := &lookaheadv1.GetResponse{}
	require.NoError(t, r.svc.reply(context.Background(), small, getReply(fetch.Result{Object: &graph.Object{ID: "s", Version: 1}, Status: fetch.StatusHit})))
	assert.Zero(t, r.svc.StreamMemory(), "a small reply holds nothing")
	got, err = codec.Marshal(small)
	require.NoError(t, err)
	raw = small.ProtoReflect().GetUnknown()
	assert.Same(t, &raw[0], &got[0].ReadOnlyData()[0], "a small reply's own bytes too")
	var one lookaheadv1.GetResponse
	require.NoError(t, proto.Unmarshal(got.Materialize(), &one))
	assert.Equal(t, "s", one.GetObject().GetId())
	assert.Equal(t, lookaheadv1.CacheStatus_CACHE_STATUS_HIT, one.GetStatus())
}

// TestRepliesAClientDoesNotReadAreBounded: a client asks for large replies
// on many streams and reads none (its flow-control window stays shut).
// gRPC would keep every reply in the sidecar's memory until the client
// reads; instead the replies waiting to be written hold at most
// --stream-memory-bytes, and the requests beyond it wait for room: another
// client's large BatchGet waits for room until its deadline passes (the
// sidecar answers RESOURCE_EXHAUSTED, the client sees its deadline), and its Get of a small object is answered at
// once. When the silent client's connection closes, gRPC drops its replies
// and their budget comes back: the large BatchGet is answered.
func TestRepliesAClientDoesNotReadAreBounded(t *testing.T) {
	const budget, payload = 2 << 20, 128 << 10
	objs, ids := bigObjects(4, payload) // a reply of 512 KiB
	objs = append(objs, &graph.Object{ID: "small", Version: 1})
	r := newRig(t, objs, rigOptions{engine: modeOff, server: Config{StreamBytes: budget}})
	ctx := context.Background()
	_, err := r.client.BatchGet(ctx, &lookaheadv1.BatchGetRequest{Ids: append(ids, "small")}) // all cached
	require.NoError(t, err)
	require.Eventually(t, func() bool { return r.svc.StreamMemory() == 0 }, 10*time.Second, time.Millisecond,
		"a reply read by its client gives its budget back")

	silent := r.dial(grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range 8 { // 4 MiB of replies, twice the budget
		s, err := silent.NewStream(sctx, &grpc.StreamDesc{ServerStreams: true}, lookaheadv1.SidecarService_BatchGet_FullMethodName)
		require.NoError(t, err)
		require.NoError(t, s.SendMsg(&lookaheadv1.BatchGetRequest{Ids: ids}))
		require.NoError(t, s.CloseSend()) // and never a RecvMsg
	}
	require.Eventually(t, func() bool { return r.svc.StreamMemory() > budget-payload*4 }, 10*time.Second, time.Millisecond,
		"the silent client's replies hold the budget")

	short, done := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = r.client.BatchGet(short, &lookaheadv1.BatchGetRequest{Ids: ids})
	done()
	require.Contains(t, []codes.Code{codes.DeadlineExceeded, codes.ResourceExhausted}, status.Code(err), "%v", err) // the client's deadline, or the sidecar's answer first
	require.Eventually(t, func() bool { return handled(t, r.reg, "BatchGet", codes.ResourceExhausted) == 1 }, 10*time.Second, time.Millisecond,
		"the sidecar gave up waiting for room with the deadline")
	one, err := r.client.Get(ctx, &lookaheadv1.GetRequest{Id: "small"})
	require.NoError(t, err, "a small reply never waits")
	assert.Equal(t, "small", one.GetObject().GetId())

	require.NoError(t, silent.Close())
	require.Eventually(t, func() bool {
		runtime.GC() // gRPC drops a closed connection's queued replies without freeing them
		return r.svc.StreamMemory() == 0
	}, 10*time.Second, 10*time.Millisecond, "the silent client's replies were dropped with its connection, and their budget came back")
	rs, err := r.client.BatchGet(ctx, &lookaheadv1.BatchGetRequest{Ids: ids})
	require.NoError(t, err)
	assert.Len(t, rs.GetResults(), 4)
}
