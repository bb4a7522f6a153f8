package origintest_test

import (
	"context"
	"io"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func chain(n int) []*graph.Object {
	objs := make([]*graph.Object, n)
	for i := range objs {
		objs[i] = &graph.Object{ID: "c" + strconv.Itoa(i), Version: 1}
		if i+1 < n {
			objs[i].Refs = []graph.Ref{{Field: "next", ID: "c" + strconv.Itoa(i+1)}}
		}
	}
	return objs
}

func start(t *testing.T, o *origintest.Origin) lookaheadv1.OriginServiceClient {
	return lookaheadv1.NewOriginServiceClient(o.Start(t))
}

// levels reads an Expand stream to its end, or n messages.
func levels(t *testing.T, c lookaheadv1.OriginServiceClient, req *lookaheadv1.ExpandRequest, n int) (got []uint32, objects int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := c.Expand(ctx, req)
	require.NoError(t, err)
	for len(got) < n {
		m, err := s.Recv()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		got = append(got, m.GetLevel())
		objects += len(m.GetObjects())
	}
	return got, objects
}

func TestOriginExpand(t *testing.T) {
	tests := []struct {
		name       string
		bad        origintest.Misbehaviour
		req        *lookaheadv1.ExpandRequest
		wantLevels []uint32
	}{
		{name: "well behaved: the budget's levels", req: &lookaheadv1.ExpandRequest{Roots: []string{"c0"}, Depth: 2},
			wantLevels: []uint32{0, 1, 2}},
		{name: "ignores the budget", bad: origintest.Misbehaviour{IgnoreBudget: true},
			req: &lookaheadv1.ExpandRequest{Roots: []string{"c0"}, Depth: 1}, wantLevels: []uint32{0, 1, 2, 3, 4}},
		{name: "endless levels", bad: origintest.Misbehaviour{IgnoreBudget: true, Generate: origintest.Endless(1)},
			req: &lookaheadv1.ExpandRequest{Roots: []string{"x"}}, wantLevels: []uint32{0, 1, 2, 3, 4, 5, 6, 7}},
		{name: "level 4294967295", bad: origintest.Misbehaviour{Level: origintest.LevelAlways(math.MaxUint32)},
			req: &lookaheadv1.ExpandRequest{Roots: []string{"c0"}, Depth: 1}, wantLevels: []uint32{math.MaxUint32, math.MaxUint32}},
		{name: "backwards", bad: origintest.Misbehaviour{Level: origintest.LevelBackwards},
			req: &lookaheadv1.ExpandRequest{Roots: []string{"c0"}, Depth: 3}, wantLevels: []uint32{0, 1, 0, 1}},
		{name: "skipping", bad: origintest.Misbehaviour{Level: origintest.LevelSkipping},
			req: &lookaheadv1.ExpandRequest{Roots: []string{"c0"}, Depth: 2}, wantLevels: []uint32{0, 2, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := origintest.New(chain(5)...)
			o.Misbehave(tt.bad)
			got, objects := levels(t, start(t, o), tt.req, 8)
			assert.Equal(t, tt.wantLevels, got)
			assert.Equal(t, len(tt.wantLevels), objects, "one object per level of a chain")
		})
	}
}

func TestOriginBatchGet(t *testing.T) {
	o := origintest.New(chain(3)...)
	c := start(t, o)
	ctx := context.Background()

	resp, err := c.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: []string{"c0", "c1", "nope"}})
	require.NoError(t, err)
	assert.Len(t, resp.GetObjects(), 2)
	assert.Equal(t, []string{"nope"}, resp.GetMissingIds())

	o.Misbehave(origintest.Misbehaviour{Omit: []string{"c1", "nope"}})
	resp, err = c.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: []string{"c0", "c1", "nope"}})
	require.NoError(t, err)
	require.Len(t, resp.GetObjects(), 1)
	assert.Equal(t, "c0", resp.GetObjects()[0].GetId())
	assert.Empty(t, resp.GetMissingIds(), "omitted ids are in neither list")

	o.Misbehave(origintest.Misbehaviour{BatchGetErr: status.Error(codes.Unavailable, "down")})
	_, err = c.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: []string{"c0"}})
	assert.Equal(t, codes.Unavailable, status.Code(err))
	hc := healthpb.NewHealthClient(o.Start(t))
	h, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, h.GetStatus(), "health lies while reads fail")

	o.Misbehave(origintest.Misbehaviour{Hang: true})
	hctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = c.BatchGet(hctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: []string{"c0"}})
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "a hung reply ends with the caller")
	assert.Equal(t, 4, o.Calls("BatchGet"))
}

// TestOriginGate: a gated reply waits for the gate to open, or for its
// caller to give up.
func TestOriginGate(t *testing.T) {
	o := origintest.New(&graph.Object{ID: "a", Version: 1})
	c := start(t, o)
	gate := make(chan struct{})
	o.Misbehave(origintest.Misbehaviour{Gate: gate})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: []string{"a"}})
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "a closed gate holds the reply")

	close(gate)
	resp, err := c.BatchGet(context.Background(), &lookaheadv1.OriginServiceBatchGetRequest{Ids: []string{"a"}})
	require.NoError(t, err, "an open gate lets it through")
	assert.Len(t, resp.GetObjects(), 1)
}

func TestOriginWide(t *testing.T) {
	o := origintest.New(origintest.Wide("w", 1000))
	resp, err := start(t, o).BatchGet(context.Background(), &lookaheadv1.OriginServiceBatchGetRequest{Ids: []string{"w"}})
	require.NoError(t, err)
	assert.Len(t, resp.GetObjects()[0].GetRefs(), 1000)
}

func TestOriginWatch(t *testing.T) {
	o := origintest.New(&graph.Object{ID: "a", Version: 1})
	c := start(t, o)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := c.Watch(ctx, &lookaheadv1.WatchRequest{})
	require.NoError(t, err)
	md, err := s.Header()
	require.NoError(t, err)
	assert.Equal(t, []string{"0"}, md.Get(origin.RevisionHeader))
	o.Announce(origin.Change{Revision: 101, ID: "a", Version: 5}, origin.Change{Revision: 102, ID: "a", Version: 6},
		origin.Change{Revision: 90, ID: "a", Version: 7})
	var revs []uint64
	for len(revs) < 3 {
		m, err := s.Recv()
		require.NoError(t, err)
		for _, ch := range m.GetChanges() {
			revs = append(revs, ch.GetRevision())
		}
	}
	assert.Equal(t, []uint64{101, 102, 90}, revs, "verbatim, backwards included")

	resp, err := c.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: []string{"a"}})
	require.NoError(t, err)
	assert.Equal(t, uint64(1), resp.GetObjects()[0].GetVersion(), "older than announced")
}

func TestOriginReset(t *testing.T) {
	o := origintest.New(chain(2)...)
	o.Misbehave(origintest.Misbehaviour{Hang: true})
	c := start(t, o)
	errc := make(chan error, 1)
	go func() {
		_, err := c.BatchGet(context.Background(), &lookaheadv1.OriginServiceBatchGetRequest{Ids: []string{"c0"}}, grpc.WaitForReady(true))
		errc <- err
	}()
	require.Eventually(t, func() bool { return o.Calls("BatchGet") == 1 }, 5*time.Second, time.Millisecond)
	o.Reset()
	assert.Equal(t, codes.Unavailable, status.Code(<-errc))
}
