package origin_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/origin"
)

// describing is a fake origin that implements Describe.
type describing struct {
	*fakeOrigin
	resp *lookaheadv1.DescribeResponse
}

func (d describing) Describe(context.Context, *lookaheadv1.DescribeRequest) (*lookaheadv1.DescribeResponse, error) {
	return d.resp, nil
}

func emptyBatch(int, *lookaheadv1.OriginServiceBatchGetRequest) (*lookaheadv1.OriginServiceBatchGetResponse, error) {
	return &lookaheadv1.OriginServiceBatchGetResponse{}, nil
}

func TestProbesOfAnOriginWithoutHealthOrDescribe(t *testing.T) {
	f := &fakeOrigin{batchGet: emptyBatch}
	r := newRig(t, f, origin.Config{Retries: -1})
	ctx := context.Background()
	require.ErrorIs(t, r.client.Check(ctx), errors.ErrUnsupported, "no grpc.health.v1")
	_, err := r.client.Describe(ctx)
	require.ErrorIs(t, err, errors.ErrUnsupported)
	require.NoError(t, r.client.Ping(ctx))
	assert.Equal(t, 1, f.Calls("BatchGet"), "Ping is an empty BatchGet")
	assert.Zero(t, roundTrips(r.m, "BatchGet"), "a probe is not a fetch")

	r.gs.Stop()
	require.Error(t, r.client.Ping(ctx))
	assert.NotErrorIs(t, r.client.Check(ctx), errors.ErrUnsupported, "unreachable is not unimplemented")
}

func TestDescribeAndHealth(t *testing.T) {
	f := &fakeOrigin{batchGet: emptyBatch}
	r := newRigWith(t, describing{f, &lookaheadv1.DescribeResponse{
		DatasetId: "ds-1", Expand: true, Writes: true,
		Limits: &lookaheadv1.OriginLimits{MaxIds: 10, MaxDepth: 2, MaxObjects: 99},
	}}, origin.Config{Retries: -1}, func(hs *health.Server) { hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING) })
	ctx := context.Background()
	assert.Zero(t, r.client.MaxKnown(), "not reported yet")
	d, err := r.client.Describe(ctx)
	require.NoError(t, err)
	assert.Equal(t, 10, r.client.MaxKnown(), "an Expand's known_ids, as the origin last said")
	assert.Equal(t, "ds-1", d.DatasetID)
	assert.True(t, d.Expand)
	assert.False(t, d.Watch)
	assert.True(t, d.Writes)
	assert.Equal(t, [3]int{10, 2, 99}, [3]int{d.MaxIDs, d.MaxDepth, d.MaxObjects})
	err = r.client.Check(ctx)
	require.ErrorContains(t, err, "NOT_SERVING")
	assert.NotErrorIs(t, err, errors.ErrUnsupported)
}

// A speculative Expand asks for at most the max_objects the origin
// reported, since speculation's budget grows with what it walks through;
// a demanded one keeps the caller's budget (the origin's refusal is the
// caller's answer).
func TestSpeculativeExpandStaysWithinTheOriginsMaxObjects(t *testing.T) {
	var (
		mu    sync.Mutex
		asked []uint32
	)
	f := &fakeOrigin{expand: func(_ int, req *lookaheadv1.ExpandRequest, _ func(*lookaheadv1.ExpandResponse) error) error {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, req.GetMaxObjects())
		return nil
	}}
	r := newRigWith(t, describing{f, &lookaheadv1.DescribeResponse{Expand: true, Limits: &lookaheadv1.OriginLimits{MaxObjects: 99}}}, origin.Config{Retries: -1}, nil)
	ctx := context.Background()
	none := func(int, []*graph.Object, []string) error { return nil }
	expand := func(ctx context.Context, maxObjects int) {
		require.NoError(t, r.client.Expand(ctx, []string{"a"}, nil, graph.Budget{Depth: 1, MaxObjects: maxObjects}, none))
	}
	expand(origin.Speculative(ctx), 500) // before Describe: nothing known
	_, err := r.client.Describe(ctx)
	require.NoError(t, err)
	expand(origin.Speculative(ctx), 500)
	expand(origin.Speculative(ctx), 50)
	expand(ctx, 500)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []uint32{500, 99, 50, 500}, asked)
}
