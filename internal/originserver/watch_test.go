package originserver

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

type change struct {
	rev     uint64
	id      string
	version uint64
	deleted bool
}

// recvChanges receives until it has n changes and returns them with the
// number of messages they came in.
func recvChanges(t *testing.T, s grpc.ServerStreamingClient[lookaheadv1.WatchResponse], n int) ([]change, int) {
	t.Helper()
	var out []change
	msgs := 0
	for len(out) < n {
		m, err := s.Recv()
		require.NoError(t, err)
		msgs++
		require.NotEmpty(t, m.GetChanges(), "no empty messages")
		for _, c := range m.GetChanges() {
			out = append(out, change{c.GetRevision(), c.GetId(), c.GetVersion(), c.GetDeleted()})
		}
	}
	require.Len(t, out, n, "no more changes than written")
	return out, msgs
}

func TestWatch(t *testing.T) {
	h := newHarness(t, Config{})
	ctx := testCtx(t)
	_, _, err := h.st.Put(node("a"), nil)
	require.NoError(t, err)
	_, _, err = h.st.Put(node("b"), nil)
	require.NoError(t, err)
	_, err = h.st.Delete("a", nil)
	require.NoError(t, err)

	stream, err := h.client.Watch(ctx, &lookaheadv1.WatchRequest{FromRevision: proto.Uint64(0)})
	require.NoError(t, err)
	header, err := stream.Header()
	require.NoError(t, err)
	assert.Equal(t, []string{"3"}, header.Get(RevisionHeader))
	assert.Equal(t, []string{h.st.Identity()}, header.Get(DatasetHeader), "revisions name their dataset")

	got, _ := recvChanges(t, stream, 3)
	assert.Equal(t, []change{{1, "a", 1, false}, {2, "b", 1, false}, {3, "a", 2, true}}, got, "history in revision order")

	// New writes, through the API, reach the open stream as they commit.
	_, err = h.client.Put(ctx, &lookaheadv1.OriginServicePutRequest{Object: &lookaheadv1.Object{Id: "a"}})
	require.NoError(t, err)
	got, _ = recvChanges(t, stream, 1)
	assert.Equal(t, []change{{4, "a", 3, false}}, got)

	_, err = h.client.Delete(ctx, &lookaheadv1.OriginServiceDeleteRequest{Id: "b"})
	require.NoError(t, err)
	_, _, err = h.st.Put(node("c"), nil)
	require.NoError(t, err)
	got, _ = recvChanges(t, stream, 2)
	assert.Equal(t, []change{{5, "b", 2, true}, {6, "c", 1, false}}, got)

	t.Run("resume from a revision", func(t *testing.T) {
		resumed, err := h.client.Watch(testCtx(t), &lookaheadv1.WatchRequest{FromRevision: proto.Uint64(4)})
		require.NoError(t, err)
		got, _ := recvChanges(t, resumed, 2)
		assert.Equal(t, []change{{5, "b", 2, true}, {6, "c", 1, false}}, got)
	})
	t.Run("from a future revision waits for it", func(t *testing.T) {
		future, err := h.client.Watch(testCtx(t), &lookaheadv1.WatchRequest{FromRevision: proto.Uint64(7)})
		require.NoError(t, err)
		_, err = future.Header()
		require.NoError(t, err)
		_, _, err = h.st.Put(node("d"), nil) // revision 7: not sent
		require.NoError(t, err)
		_, _, err = h.st.Put(node("e"), nil) // revision 8
		require.NoError(t, err)
		got, _ := recvChanges(t, future, 1)
		assert.Equal(t, []change{{8, "e", 1, false}}, got)
	})
}

func TestWatchFromNow(t *testing.T) {
	h := newHarness(t, Config{}, node("a"), node("b"))
	now, err := h.client.Watch(testCtx(t), &lookaheadv1.WatchRequest{})
	require.NoError(t, err)
	header, err := now.Header()
	require.NoError(t, err)
	assert.Equal(t, []string{"2"}, header.Get(RevisionHeader))
	_, _, err = h.st.Put(node("d"), nil)
	require.NoError(t, err)
	got, _ := recvChanges(t, now, 1)
	assert.Equal(t, []change{{3, "d", 1, false}}, got, "without from_revision: no history replayed")
}

func TestWatchBatches(t *testing.T) {
	h := newHarness(t, Config{WatchBatch: 2}, node("a"), node("b"), node("c"), node("d"), node("e"))
	stream, err := h.client.Watch(testCtx(t), &lookaheadv1.WatchRequest{FromRevision: proto.Uint64(0)})
	require.NoError(t, err)
	got, msgs := recvChanges(t, stream, 5)
	assert.Equal(t, 3, msgs, "5 changes in batches of 2")
	for i, c := range got {
		assert.Equal(t, uint64(i+1), c.rev)
	}
	assert.Equal(t, 5.0, value(t, h.srv.m.changesSent))
}

func TestWatchEnds(t *testing.T) {
	tests := []struct {
		name     string
		end      func(h *harness, cancel context.CancelFunc)
		wantCode codes.Code
	}{
		{name: "server shutdown", end: func(h *harness, _ context.CancelFunc) { h.srv.Shutdown() }, wantCode: codes.Unavailable},
		{name: "store closed", end: func(h *harness, _ context.CancelFunc) { require.NoError(t, h.st.Close()) }, wantCode: codes.Unavailable},
		{name: "caller cancels", end: func(_ *harness, cancel context.CancelFunc) { cancel() }, wantCode: codes.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{}, node("a"))
			// Called directly, so that the handler's own return is observed.
			ctx, cancel := context.WithCancel(testCtx(t))
			defer cancel()
			headerSent := make(chan struct{})
			stream := &fakeStream[lookaheadv1.WatchResponse]{ctx: ctx, onSend: func(*lookaheadv1.WatchResponse) error {
				close(headerSent) // the one change in the store
				return nil
			}}
			done := make(chan error, 1)
			go func() { done <- h.srv.Watch(&lookaheadv1.WatchRequest{FromRevision: proto.Uint64(0)}, stream) }()
			<-headerSent
			tc.end(h, cancel)
			err := <-done
			assert.Equal(t, tc.wantCode, status.Code(err), "%v", err)
			assert.Zero(t, value(t, h.srv.m.watchStreams))
		})
	}
}

func TestWatchAfterShutdown(t *testing.T) {
	h := newHarness(t, Config{})
	h.srv.Shutdown()
	h.srv.Shutdown() // idempotent
	stream, err := h.client.Watch(testCtx(t), &lookaheadv1.WatchRequest{})
	require.NoError(t, err)
	_, err = stream.Recv()
	assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)

	_, err = h.client.BatchGet(testCtx(t), &lookaheadv1.OriginServiceBatchGetRequest{Ids: []string{"a"}})
	assert.NoError(t, err, "Shutdown ends only watches")
}
