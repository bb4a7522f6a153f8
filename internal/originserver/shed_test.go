package originserver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/origin"
)

// Over its limit of calls in flight, the origin sheds speculative calls at
// once and goes on serving demand; under it, it serves speculation too.
// Calls are held in flight by the latency wait, not by time.
func TestShedsSpeculationAboveTheLimitAndServesDemand(t *testing.T) {
	hold, entered, release := holding()
	h := newHarnessWait(t, Config{Latency: time.Second, ShedSpeculativeAbove: 1}, hold, node("a", "f", "b"), node("b"))
	ctx := testCtx(t)
	spec := origin.Speculative(ctx)

	demands := []chan error{h.goGet(ctx)}
	<-entered // a demand in flight: the limit

	_, err := h.client.BatchGet(spec, &lookaheadv1.OriginServiceBatchGetRequest{Ids: []string{"a"}})
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "a speculative BatchGet over the limit: %v", err)
	assert.Contains(t, status.Convert(err).Message(), "--shed-speculative-above")
	stream, err := h.client.Expand(spec, &lookaheadv1.ExpandRequest{Roots: []string{"a"}, Depth: 1})
	require.NoError(t, err)
	_, err = recvAll(t, stream)
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "a speculative Expand over the limit: %v", err)

	demands = append(demands, h.goGet(ctx))
	<-entered // a second demand is admitted over the limit
	close(release)
	for i, d := range demands {
		require.NoError(t, <-d, "demand %d", i)
	}
	_, err = h.client.BatchGet(spec, &lookaheadv1.OriginServiceBatchGetRequest{Ids: []string{"a"}})
	require.NoError(t, err, "alone, within the limit, speculation is served")

	assert.Equal(t, 1.0, value(t, h.srv.m.shed.WithLabelValues("BatchGet")))
	assert.Equal(t, 1.0, value(t, h.srv.m.shed.WithLabelValues("Expand")))
	assert.Equal(t, 2.0, value(t, h.srv.m.requests.WithLabelValues("BatchGet", "ResourceExhausted"))+
		value(t, h.srv.m.requests.WithLabelValues("Expand", "ResourceExhausted")), "sheds are counted as requests too")
}

func TestNeverShedsWithoutALimit(t *testing.T) {
	hold, entered, release := holding()
	h := newHarnessWait(t, Config{Latency: time.Second}, hold, node("a"))
	ctx := testCtx(t)
	calls := []chan error{h.goGet(ctx), h.goGet(ctx)}
	<-entered
	<-entered
	calls = append(calls, h.goGet(origin.Speculative(ctx)))
	select {
	case <-entered:
	case err := <-calls[2]:
		t.Fatalf("a speculative call answered at once, not served: %v", err)
	}
	close(release)
	for i, c := range calls {
		require.NoError(t, <-c, "call %d", i)
	}
	assert.Equal(t, 0.0, value(t, h.srv.m.shed.WithLabelValues("BatchGet")))
}

// holding is a latency wait that holds every call in flight, each
// announced on entered, until release is closed.
func holding() (hold func(context.Context, time.Duration) error, entered chan struct{}, release chan struct{}) {
	entered, release = make(chan struct{}, 8), make(chan struct{})
	hold = func(ctx context.Context, _ time.Duration) error {
		entered <- struct{}{}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return hold, entered, release
}

// goGet starts a BatchGet of "a" with ctx and returns where its error
// will be sent.
func (h *harness) goGet(ctx context.Context) chan error {
	done := make(chan error, 1)
	go func() {
		_, err := h.client.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: []string{"a"}})
		done <- err
	}()
	return done
}
