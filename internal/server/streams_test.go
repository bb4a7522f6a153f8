package server

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

// fans are n roots r0, r1, … each with children objects of payload bytes.
func fans(n, children, payload int) []*graph.Object {
	var objs []*graph.Object
	for i := range n {
		root := &graph.Object{ID: fmt.Sprintf("r%d", i), Version: 1}
		for j := range children {
			id := fmt.Sprintf("r%d-c%d", i, j)
			root.Refs = append(root.Refs, graph.Ref{Field: "c", ID: id})
			objs = append(objs, &graph.Object{ID: id, Version: 1, Payload: make([]byte, payload)})
		}
		objs = append(objs, root)
	}
	return objs
}

// TestStreamMemoryIsBounded: GetGraph streams whose clients do not read
// hold, all together, no more than StreamBytes; while it is spent a new
// GetGraph is refused RESOURCE_EXHAUSTED naming the limit and a Get of a
// cached object is answered; the walks that waited for room complete once
// their clients read, and the budget is all given back.
func TestStreamMemoryIsBounded(t *testing.T) {
	const streams, children, limit = 8, 16, 128 << 10
	o := origintest.New(append(fans(streams+1, children, 16<<10), &graph.Object{ID: "hit", Version: 1})...)
	r := newHostileRigWith(t, o, origin.Config{}, Config{StreamBytes: limit, ChunkBytes: 32 << 10})
	_, err := r.get("hit")
	require.NoError(t, err)
	// The smallest windows gRPC allows, and no growing them: a client that
	// does not read stops its stream's sends after 64 KiB or so.
	slow := lookaheadv1.NewSidecarServiceClient(r.dial(grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10)))

	var peak atomic.Int64
	stop := watchPeak(r.svc, &peak)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The origin answers no walk until all of them are admitted: else the
	// first walks could spend the budget before the last were let in.
	gate := make(chan struct{})
	o.Misbehave(origintest.Misbehaviour{Gate: gate})
	open := make([]lookaheadv1.SidecarService_GetGraphClient, streams)
	for i := range open {
		open[i], err = slow.GetGraph(ctx, &lookaheadv1.GetGraphRequest{Roots: []string{fmt.Sprintf("r%d", i)}})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return len(r.svc.walks) == streams }, 10*time.Second, time.Millisecond, "every walk admitted")
	o.Misbehave(origintest.Misbehaviour{})
	close(gate)
	var refused error
	assert.Eventually(t, func() bool {
		// Admitted before the budget is spent, a walk waits for room
		// until its deadline: then try again.
		actx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		refused = firstError(actx, r.client, fmt.Sprintf("r%d", streams))
		return status.Code(refused) == codes.ResourceExhausted
	}, 10*time.Second, 10*time.Millisecond, "a GetGraph beyond the budget is refused: %v", refused)
	assert.Contains(t, status.Convert(refused).Message(), "--stream-memory-bytes")
	_, err = r.get("hit")
	assert.NoError(t, err, "a hit is answered while the budget is spent")

	var wg sync.WaitGroup
	for i, s := range open {
		wg.Go(func() {
			n, err := drain(s)
			assert.NoError(t, err, "stream %d", i)
			assert.Equal(t, children+1, n, "stream %d: the whole graph", i)
		})
	}
	wg.Wait()
	stop()
	assert.LessOrEqual(t, peak.Load(), int64(limit), "the streams never held more than the limit")
	assert.Greater(t, peak.Load(), int64(limit/2), "the streams did fill the budget")
	assert.Eventually(t, func() bool { return r.svc.StreamMemory() == 0 }, 10*time.Second, time.Millisecond, "all given back")
}

// watchPeak records the most s's streams hold, sampled until stop.
func watchPeak(s *Server, peak *atomic.Int64) (stop func()) {
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			if n := s.StreamMemory(); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-quit:
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	}()
	return func() { close(quit); <-done }
}

// firstError opens a GetGraph of root and returns its error, if any, after
// reading it to the end.
func firstError(ctx context.Context, c lookaheadv1.SidecarServiceClient, root string) error {
	s, err := c.GetGraph(ctx, &lookaheadv1.GetGraphRequest{Roots: []string{root}})
	if err != nil {
		return err
	}
	_, err = drain(s)
	return err
}

// drain reads s to its end and counts the objects.
func drain(s lookaheadv1.SidecarService_GetGraphClient) (int, error) {
	n := 0
	for {
		resp, err := s.Recv()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n += len(resp.GetResults())
	}
}
