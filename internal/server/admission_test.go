package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

// TestOriginRequestsAreAdmitted: with one place and one waiter, a Get of an
// uncached id runs, the next waits, the one after is refused
// RESOURCE_EXHAUSTED naming both flags; Gets and BatchGets the cache
// answers whole neither wait nor are refused, a BatchGet with one uncached
// id is; a waiter whose caller gives up leaves, and a place given back
// admits the next waiter. The gauges follow every step.
func TestOriginRequestsAreAdmitted(t *testing.T) {
	o := origintest.New(&graph.Object{ID: "hit", Version: 1})
	r := newHostileRigWith(t, o, origin.Config{}, Config{MaxOriginRequests: 1, MaxOriginWaiting: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := r.get("hit")
	require.NoError(t, err)
	o.Misbehave(origintest.Misbehaviour{Hang: true})
	counts := func(running, waiting int64) func() bool {
		return func() bool { n, w := r.svc.OriginRequests(); return n == running && w == waiting }
	}

	first := r.hang(t, "a")
	require.Eventually(t, counts(1, 0), 10*time.Second, time.Millisecond, "the first miss runs")
	second := r.hang(t, "b")
	require.Eventually(t, counts(1, 1), 10*time.Second, time.Millisecond, "the second waits")

	_, err = r.get("c")
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	assert.Contains(t, status.Convert(err).Message(), "--max-origin-requests")
	assert.Contains(t, status.Convert(err).Message(), "--max-origin-waiting")
	_, err = r.client.BatchGet(ctx, &lookaheadv1.BatchGetRequest{Ids: []string{"hit", "d"}})
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "one uncached id: %v", err)

	resp, err := r.get("hit")
	require.NoError(t, err, "a hit takes no place")
	assert.Equal(t, lookaheadv1.CacheStatus_CACHE_STATUS_HIT, resp.GetStatus())
	_, err = r.client.BatchGet(ctx, &lookaheadv1.BatchGetRequest{Ids: []string{"hit", "hit"}})
	assert.NoError(t, err, "a BatchGet of hits takes no place")
	assert.Condition(t, counts(1, 1), "the hits neither ran nor waited as misses")

	assert.Equal(t, codes.Canceled, status.Code(second()), "the waiter's caller gave up")
	require.Eventually(t, counts(1, 0), 10*time.Second, time.Millisecond, "it left the queue")
	third := r.hang(t, "e")
	require.Eventually(t, counts(1, 1), 10*time.Second, time.Millisecond)
	assert.Equal(t, codes.Canceled, status.Code(first()))
	require.Eventually(t, counts(1, 0), 10*time.Second, time.Millisecond, "the place went to the waiter")
	assert.Equal(t, codes.Canceled, status.Code(third()))
	require.Eventually(t, counts(0, 0), 10*time.Second, time.Millisecond, "every place given back")
}

// hang starts a Get of id, which the hanging origin never answers; stop
// cancels it and returns its error.
func (r *hostileRig) hang(t *testing.T, id string) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := r.client.Get(ctx, &lookaheadv1.GetRequest{Id: id})
		errc <- err
	}()
	t.Cleanup(cancel)
	return func() error { cancel(); return <-errc }
}
