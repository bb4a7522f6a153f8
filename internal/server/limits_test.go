package server

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

// TestMaxDepthLimitsGetGraph: --max-depth N is the deepest level a GetGraph
// reaches, whether it asks for no depth (the limit applies) or for N, and a
// depth of N+1 is refused.
func TestMaxDepthLimitsGetGraph(t *testing.T) {
	for _, limit := range []int{1, 2} {
		r := newRig(t, taskTree(t, 1, 2, 5), rigOptions{engine: modeOff, server: Config{MaxDepth: limit}})
		ctx := context.Background()
		deepest := func(req *lookaheadv1.GetGraphRequest) (int, int, error) {
			stream, err := r.client.GetGraph(ctx, req)
			require.NoError(t, err)
			most, n := -1, 0
			for {
				resp, err := stream.Recv()
				if err == io.EOF {
					return most, n, nil
				}
				if err != nil {
					return most, n, err
				}
				for _, res := range resp.GetResults() {
					most = max(most, int(res.GetLevel()))
					n++
				}
			}
		}
		n := uint32(limit)
		for name, req := range map[string]*lookaheadv1.GetGraphRequest{
			"depth unset": {Roots: []string{"task-0"}},
			"depth = max": {Roots: []string{"task-0"}, Depth: &n},
		} {
			most, objs, err := deepest(req)
			require.NoError(t, err, name)
			assert.Equal(t, limit, most, "%s: the deepest level is the limit", name)
			assert.Equal(t, 1<<(limit+1)-1, objs, "%s: a binary tree to level %d", name, limit)
		}
		over := uint32(limit + 1)
		_, _, err := deepest(&lookaheadv1.GetGraphRequest{Roots: []string{"task-0"}, Depth: &over})
		assert.Equal(t, codes.InvalidArgument, status.Code(err), "depth %d over a limit of %d", over, limit)
	}
}

// TestBatchGetReplyOverTheLimitIsRefused: a BatchGet of a few ids whose
// objects together take more than a reply may is refused
// RESOURCE_EXHAUSTED naming the limit, before its reply is built; fewer of
// the same ids are answered.
func TestBatchGetReplyOverTheLimitIsRefused(t *testing.T) {
	var objs []*graph.Object
	var ids []string
	for i := range 5 {
		o := &graph.Object{ID: fmt.Sprintf("o%d", i), Version: 1, Payload: make([]byte, 4<<10)}
		objs, ids = append(objs, o), append(ids, o.ID)
	}
	r := newHostileRigWith(t, origintest.New(objs...), origin.Config{}, Config{MaxReplyBytes: 10 << 10})
	ctx := context.Background()
	_, err := r.client.BatchGet(ctx, &lookaheadv1.BatchGetRequest{Ids: ids})
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	assert.Regexp(t, `^the 5 objects asked for take \d+ bytes, more than a reply may \(10240, --max-message-bytes\): ask for fewer ids at a time$`,
		status.Convert(err).Message())
	resp, err := r.client.BatchGet(ctx, &lookaheadv1.BatchGetRequest{Ids: ids[:2]})
	require.NoError(t, err)
	assert.Len(t, resp.GetResults(), 2)
}
