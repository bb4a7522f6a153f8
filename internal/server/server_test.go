package server

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/originserver"
)

func u32(v uint32) *uint32 { return &v }

func TestGetThenHit(t *testing.T) {
	r := newRig(t, taskTree(t, 1, 2, 2), rigOptions{engine: modeOff})
	ctx := context.Background()
	resp, err := r.client.Get(ctx, &lookaheadv1.GetRequest{Id: "task-0"})
	require.NoError(t, err)
	assert.Equal(t, "task-0", resp.GetObject().GetId())
	assert.Len(t, resp.GetObject().GetRefs(), 2)
	assert.Equal(t, lookaheadv1.CacheStatus_CACHE_STATUS_MISS, resp.GetStatus())
	resp, err = r.client.Get(ctx, &lookaheadv1.GetRequest{Id: "task-0"})
	require.NoError(t, err)
	assert.Equal(t, lookaheadv1.CacheStatus_CACHE_STATUS_HIT, resp.GetStatus())
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.OriginRoundTrips.WithLabelValues("BatchGet", "OK")))
	assert.Equal(t, 2.0, handled(t, r.reg, "Get", codes.OK), "requests are counted by method and code")
}

func TestBatchGetOneRoundTripForAllMisses(t *testing.T) {
	r := newRig(t, taskTree(t, 1, 3, 2), rigOptions{engine: modeOff})
	resp, err := r.client.BatchGet(context.Background(), &lookaheadv1.BatchGetRequest{
		Ids: []string{"task-0.2", "task-0", "nope", "task-0.2", "task-0.1"}})
	require.NoError(t, err)
	var ids []string
	for _, res := range resp.GetResults() {
		ids = append(ids, res.GetObject().GetId())
	}
	assert.Equal(t, []string{"task-0.2", "task-0", "task-0.1"}, ids, "request order, duplicates removed")
	assert.Equal(t, []string{"nope"}, resp.GetMissingIds())
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.OriginRoundTrips.WithLabelValues("BatchGet", "OK")))
}

func TestNotFoundIsRemembered(t *testing.T) {
	r := newRig(t, taskTree(t, 1, 1, 1), rigOptions{engine: modeOff})
	for i := 0; i < 3; i++ {
		_, err := r.client.Get(context.Background(), &lookaheadv1.GetRequest{Id: "ghost"})
		require.Equal(t, codes.NotFound, status.Code(err))
		assert.Contains(t, status.Convert(err).Message(), `"ghost"`)
	}
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.OriginRoundTrips.WithLabelValues("BatchGet", "OK")),
		"a negative entry answers the repeats")
}

func TestInvalidInput(t *testing.T) {
	r := newRig(t, taskTree(t, 1, 1, 1), rigOptions{engine: modeOff, server: Config{MaxIDs: 3, MaxDepth: 4, MaxObjects: 50}})
	long := strings.Repeat("x", graph.MaxIDBytes+1)
	ctx := context.Background()
	graphErr := func(req *lookaheadv1.GetGraphRequest) error {
		s, err := r.client.GetGraph(ctx, req)
		if err != nil {
			return err
		}
		_, err = s.Recv()
		return err
	}
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"empty id", func() error { _, err := r.client.Get(ctx, &lookaheadv1.GetRequest{}); return err }, "id: empty id"},
		{"id too long", func() error { _, err := r.client.Get(ctx, &lookaheadv1.GetRequest{Id: long}); return err }, "exceeds the limit of 1024"},
		{"too many ids", func() error {
			_, err := r.client.BatchGet(ctx, &lookaheadv1.BatchGetRequest{Ids: []string{"a", "b", "c", "d"}})
			return err
		}, "4 ids exceed the limit of 3"},
		{"empty id in batch", func() error {
			_, err := r.client.BatchGet(ctx, &lookaheadv1.BatchGetRequest{Ids: []string{"a", ""}})
			return err
		}, "ids[1]: empty id"},
		{"hint depth over limit", func() error {
			_, err := r.client.Get(ctx, &lookaheadv1.GetRequest{Id: "a", Hint: &lookaheadv1.PrefetchHint{Depth: u32(5)}})
			return err
		}, "hint: depth 5 exceeds the limit of 4"},
		{"hint max objects over limit", func() error {
			_, err := r.client.Get(ctx, &lookaheadv1.GetRequest{Id: "a", Hint: &lookaheadv1.PrefetchHint{MaxObjects: u32(51)}})
			return err
		}, "hint: max_objects 51 exceeds the limit of 50"},
		{"graph without roots", func() error { return graphErr(&lookaheadv1.GetGraphRequest{}) }, "at least one root"},
		{"graph depth over limit", func() error {
			return graphErr(&lookaheadv1.GetGraphRequest{Roots: []string{"a"}, Depth: u32(9)})
		}, "depth 9 exceeds the limit of 4"},
		{"graph empty field", func() error {
			return graphErr(&lookaheadv1.GetGraphRequest{Roots: []string{"a"}, Fields: []string{""}})
		}, "fields[0]: empty field name"},
		{"put without id", func() error {
			_, err := r.client.Put(ctx, &lookaheadv1.PutRequest{Object: &lookaheadv1.Object{}})
			return err
		}, "object: graph: empty id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			assert.Contains(t, status.Convert(err).Message(), tt.want)
		})
	}
	assert.Zero(t, testutil.ToFloat64(r.m.OriginRoundTrips.WithLabelValues("BatchGet", "OK")), "bad input never reaches the origin")
}

func TestGetGraphStreamsChunksBreadthFirst(t *testing.T) {
	objs := taskTree(t, 1, 5, 4) // 156 objects
	r := newRig(t, objs, rigOptions{engine: modeOff, server: Config{ChunkObjects: 10}})
	for pass := 1; pass <= 2; pass++ {
		s, err := r.client.GetGraph(context.Background(), &lookaheadv1.GetGraphRequest{Roots: []string{"task-0"}, Depth: u32(10)})
		require.NoError(t, err)
		var got []string
		var levels []uint32
		msgs := 0
		for {
			resp, err := s.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			msgs++
			assert.LessOrEqual(t, len(resp.GetResults()), 10)
			for _, res := range resp.GetResults() {
				got = append(got, res.GetObject().GetId())
				levels = append(levels, res.GetLevel())
				if pass == 2 {
					assert.Equal(t, lookaheadv1.CacheStatus_CACHE_STATUS_HIT, res.GetStatus())
				}
			}
		}
		require.Len(t, got, len(objs))
		for i, o := range objs {
			assert.Equal(t, o.ID, got[i])
		}
		assert.IsNonDecreasing(t, levels)
		assert.GreaterOrEqual(t, msgs, 16)
	}
	// Expand is the reference origin's: one round trip for the first walk, none for the second.
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.OriginRoundTrips.WithLabelValues("Expand", "OK")))
	assert.Zero(t, testutil.ToFloat64(r.m.OriginRoundTrips.WithLabelValues("BatchGet", "OK")))
}

func TestOriginDown(t *testing.T) {
	r := newRig(t, taskTree(t, 1, 2, 2), rigOptions{engine: modeOff})
	ctx := context.Background()
	_, err := r.client.Get(ctx, &lookaheadv1.GetRequest{Id: "task-0"})
	require.NoError(t, err)
	r.originGRPC.Stop()

	resp, err := r.client.Get(ctx, &lookaheadv1.GetRequest{Id: "task-0"})
	require.NoError(t, err, "cached objects are still served")
	assert.Equal(t, "task-0", resp.GetObject().GetId())

	_, err = r.client.Get(ctx, &lookaheadv1.GetRequest{Id: "task-0.1"})
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	assert.Contains(t, status.Convert(err).Message(), "origin unavailable")
}

func TestCallerDeadlineReachesOrigin(t *testing.T) {
	r := newRig(t, taskTree(t, 1, 1, 1), rigOptions{engine: modeOff, origin: originserver.Config{Latency: time.Minute}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := r.client.Get(ctx, &lookaheadv1.GetRequest{Id: "task-0"})
	require.Equal(t, codes.DeadlineExceeded, status.Code(err), "%v", err)
}

func TestWriteThroughInvalidates(t *testing.T) {
	r := newRig(t, taskTree(t, 1, 1, 1), rigOptions{engine: modeOff})
	ctx := context.Background()
	got, err := r.client.Get(ctx, &lookaheadv1.GetRequest{Id: "task-0"})
	require.NoError(t, err)
	v := got.GetObject().GetVersion()

	put, err := r.client.Put(ctx, &lookaheadv1.PutRequest{
		Object: &lookaheadv1.Object{Id: "task-0", Type: "Task", Payload: []byte("new")}, ExpectedVersion: &v})
	require.NoError(t, err)
	assert.Greater(t, put.GetVersion(), v)

	after, err := r.client.Get(ctx, &lookaheadv1.GetRequest{Id: "task-0"})
	require.NoError(t, err)
	assert.Equal(t, []byte("new"), after.GetObject().GetPayload())
	assert.Equal(t, put.GetVersion(), after.GetObject().GetVersion())

	_, err = r.client.Put(ctx, &lookaheadv1.PutRequest{Object: &lookaheadv1.Object{Id: "task-0"}, ExpectedVersion: &v})
	assert.Equal(t, codes.FailedPrecondition, status.Code(err), "stale expected version")
	assert.NotContains(t, status.Convert(err).Message(), "rpc error", "the origin's status is passed on, not wrapped in another")

	_, err = r.client.Delete(ctx, &lookaheadv1.DeleteRequest{Id: "task-0"})
	require.NoError(t, err)
	_, err = r.client.Get(ctx, &lookaheadv1.GetRequest{Id: "task-0"})
	assert.Equal(t, codes.NotFound, status.Code(err))

	_, err = r.client.Put(ctx, &lookaheadv1.PutRequest{Object: &lookaheadv1.Object{Id: "task-0"}})
	require.NoError(t, err)
	_, err = r.client.Get(ctx, &lookaheadv1.GetRequest{Id: "task-0"})
	require.NoError(t, err, "re-created after delete: the negative entry was dropped")
	inv, err := r.client.Invalidate(ctx, &lookaheadv1.InvalidateRequest{Ids: []string{"task-0", "never"}})
	require.NoError(t, err)
	assert.Equal(t, uint32(1), inv.GetInvalidated(), "only task-0 was cached")
}

func TestGetGraphFloodIsRefused(t *testing.T) {
	r := newRig(t, taskTree(t, 1, 1, 1), rigOptions{engine: modeOff, server: Config{MaxWalks: 1},
		origin: originserver.Config{Latency: time.Minute}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, err := r.client.GetGraph(ctx, &lookaheadv1.GetGraphRequest{Roots: []string{"task-0"}})
	require.NoError(t, err)
	// The first walk holds the only place while its origin call hangs.
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(r.m.OriginInFlight.WithLabelValues("Expand"))+
			testutil.ToFloat64(r.m.OriginInFlight.WithLabelValues("BatchGet")) > 0
	}, 10*time.Second, time.Millisecond)
	second, err := r.client.GetGraph(context.Background(), &lookaheadv1.GetGraphRequest{Roots: []string{"task-0"}})
	require.NoError(t, err)
	_, err = second.Recv()
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	assert.Contains(t, status.Convert(err).Message(), "--max-walks")
	cancel()
	_, err = first.Recv()
	assert.Equal(t, codes.Canceled, status.Code(err))
}

// TestGetGraphObjectsAsTheOriginHasThem: a cold GetGraph sends the objects
// as the origin encoded them, and an object cached by another path (a
// BatchGet, decoded and held without its encoding) encoded again: either
// way each arrives equal to the origin's, with its status and level.
func TestGetGraphObjectsAsTheOriginHasThem(t *testing.T) {
	objs := taskTree(t, 2, 3, 3) // 2 trees of 13 objects
	r := newRig(t, objs, rigOptions{engine: modeOff})
	ctx := context.Background()
	ids := make([]string, len(objs))
	for i, o := range objs {
		ids[i] = o.ID
	}
	stored, err := r.origin.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: ids})
	require.NoError(t, err)
	want := map[string]*lookaheadv1.Object{}
	for _, o := range stored.GetObjects() {
		want[o.GetId()] = o
	}
	check := func(req *lookaheadv1.GetGraphRequest, status lookaheadv1.CacheStatus) int {
		s, err := r.client.GetGraph(ctx, req)
		require.NoError(t, err)
		got := 0
		for {
			resp, err := s.Recv()
			if errors.Is(err, io.EOF) {
				return got
			}
			require.NoError(t, err)
			for _, res := range resp.GetResults() {
				id := res.GetObject().GetId()
				assert.True(t, proto.Equal(want[id], res.GetObject()), "%s: got %v, want %v", id, res.GetObject(), want[id])
				assert.Equal(t, status, res.GetStatus(), id)
				assert.Equal(t, taskLevel(t, id), res.GetLevel(), id)
				got++
			}
		}
	}
	assert.Equal(t, 13, check(&lookaheadv1.GetGraphRequest{Roots: []string{"task-0"}}, lookaheadv1.CacheStatus_CACHE_STATUS_MISS))

	_, err = r.client.BatchGet(ctx, &lookaheadv1.BatchGetRequest{Ids: []string{"task-1"}})
	require.NoError(t, err)
	assert.Equal(t, 1, check(&lookaheadv1.GetGraphRequest{Roots: []string{"task-1"}, Depth: u32(0)}, lookaheadv1.CacheStatus_CACHE_STATUS_HIT))
}

// taskLevel is the level of a task of a tree of fan-out 3: task-0.k are
// numbered breadth-first.
func taskLevel(t *testing.T, id string) uint32 {
	t.Helper()
	k := 0
	if _, after, ok := strings.Cut(id, "."); ok {
		var err error
		k, err = strconv.Atoi(after)
		require.NoError(t, err)
	}
	switch {
	case k == 0:
		return 0
	case k <= 3:
		return 1
	}
	return 2
}
