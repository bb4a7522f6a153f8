package originserver

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// eventLog records, in order, the latency waits and the stream sends.
type eventLog struct {
	mu     sync.Mutex // protects events
	events []string
}

func (l *eventLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

func TestLatencyDelaysEveryReply(t *testing.T) {
	var log eventLog
	wait := func(_ context.Context, d time.Duration) error {
		log.add("wait " + d.String())
		return nil
	}
	h := newHarnessWait(t, Config{Latency: 42 * time.Millisecond}, wait, node("a", "f", "b"), node("b"))
	ctx := testCtx(t)
	const waited = "wait 42ms"

	tests := []struct {
		name string
		call func(t *testing.T)
	}{
		{name: "BatchGet", call: func(t *testing.T) {
			_, err := h.client.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: []string{"a"}})
			require.NoError(t, err)
		}},
		{name: "Put", call: func(t *testing.T) {
			_, err := h.client.Put(ctx, &lookaheadv1.OriginServicePutRequest{Object: &lookaheadv1.Object{Id: "c"}})
			require.NoError(t, err)
		}},
		{name: "Delete", call: func(t *testing.T) {
			_, err := h.client.Delete(ctx, &lookaheadv1.OriginServiceDeleteRequest{Id: "c"})
			require.NoError(t, err)
		}},
		{name: "invalid request", call: func(t *testing.T) {
			_, err := h.client.Delete(ctx, &lookaheadv1.OriginServiceDeleteRequest{})
			require.Equal(t, codes.InvalidArgument, status.Code(err))
		}},
		{name: "Expand, before its first message", call: func(t *testing.T) {
			stream := &fakeStream[lookaheadv1.ExpandResponse]{ctx: ctx, onSend: func(*lookaheadv1.ExpandResponse) error {
				log.add("send")
				return nil
			}}
			require.NoError(t, h.srv.Expand(&lookaheadv1.ExpandRequest{Roots: []string{"a"}, Depth: 1}, stream))
			assert.Equal(t, []string{waited, "send", "send"}, log.get())
		}},
		{name: "Watch, before its first message", call: func(t *testing.T) {
			wctx, cancel := context.WithCancel(ctx)
			stream := &fakeStream[lookaheadv1.WatchResponse]{ctx: wctx, onSend: func(*lookaheadv1.WatchResponse) error {
				log.add("send")
				cancel() // enough: end the watch
				return nil
			}}
			err := h.srv.Watch(&lookaheadv1.WatchRequest{FromRevision: proto.Uint64(0)}, stream)
			assert.Equal(t, codes.Canceled, status.Code(err))
			assert.Equal(t, []string{waited, "send"}, log.get())
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log = eventLog{}
			tc.call(t)
			assert.Equal(t, waited, log.get()[0])
			assert.Equal(t, 1, countOf(log.get(), waited), "one wait per call")
		})
	}
}

func countOf(s []string, v string) int {
	n := 0
	for _, e := range s {
		if e == v {
			n++
		}
	}
	return n
}

// TestLatencyHonoursDeadline runs the real wait with a latency far longer
// than any test: every call can only end because the caller's context does.
func TestLatencyHonoursDeadline(t *testing.T) {
	h := newHarness(t, Config{Latency: time.Hour}, node("a"))
	expired, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	canceled, cancel2 := context.WithCancel(context.Background())
	cancel2()

	tests := []struct {
		name     string
		ctx      context.Context
		call     func(ctx context.Context) error
		wantCode codes.Code
	}{
		{name: "BatchGet deadline", ctx: expired, wantCode: codes.DeadlineExceeded, call: func(ctx context.Context) error {
			_, err := h.srv.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: []string{"a"}})
			return err
		}},
		{name: "Put canceled", ctx: canceled, wantCode: codes.Canceled, call: func(ctx context.Context) error {
			_, err := h.srv.Put(ctx, &lookaheadv1.OriginServicePutRequest{Object: &lookaheadv1.Object{Id: "b"}})
			return err
		}},
		{name: "Delete deadline", ctx: expired, wantCode: codes.DeadlineExceeded, call: func(ctx context.Context) error {
			_, err := h.srv.Delete(ctx, &lookaheadv1.OriginServiceDeleteRequest{Id: "a"})
			return err
		}},
		{name: "Expand deadline", ctx: expired, wantCode: codes.DeadlineExceeded, call: func(ctx context.Context) error {
			s := &fakeStream[lookaheadv1.ExpandResponse]{ctx: ctx}
			err := h.srv.Expand(&lookaheadv1.ExpandRequest{Roots: []string{"a"}}, s)
			if len(s.sent) > 0 {
				return nil
			}
			return err
		}},
		{name: "Watch canceled", ctx: canceled, wantCode: codes.Canceled, call: func(ctx context.Context) error {
			s := &fakeStream[lookaheadv1.WatchResponse]{ctx: ctx}
			err := h.srv.Watch(&lookaheadv1.WatchRequest{}, s)
			if len(s.sent) > 0 {
				return nil
			}
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			<-tc.ctx.Done()
			err := tc.call(tc.ctx)
			assert.Equal(t, tc.wantCode, status.Code(err), "%v", err)
		})
	}
	assert.Equal(t, uint64(1), h.st.Revision(), "no write after the load: callers gave up first")
	assert.Equal(t, 1.0, value(t, h.srv.m.requests.WithLabelValues("BatchGet", "DeadlineExceeded")))

	t.Run("over the network", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(testCtx(t), 50*time.Millisecond)
		defer cancel()
		_, err := h.client.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: []string{"a"}})
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "%v", err)
	})
}
