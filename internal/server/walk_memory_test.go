package server

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

// TestWalkMemoryIsBounded: an origin streams a 60-level walk as fast as it
// can to a client that does not read. What the walk's Expand holds for it
// stays within the walk's share of the stream memory budget (StreamBytes /
// MaxWalks) plus one origin message, where without a bound it would hold
// every level received; once the client reads, every level arrives, and
// nothing stays held.
func TestWalkMemoryIsBounded(t *testing.T) {
	const levels, payload, share = 60, 32 << 10, 128 << 10
	o := origintest.New()
	o.Misbehave(origintest.Misbehaviour{Generate: tree(1, payload)})
	r := newHostileRigWith(t, o, origin.Config{}, Config{MaxDepth: levels, StreamBytes: share, MaxWalks: 1})
	message := tree(1, payload)("t").Size() // one level, one object
	slow := lookaheadv1.NewSidecarServiceClient(r.dial(grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10)))
	var peak atomic.Int64
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			peak.Store(max(peak.Load(), r.f.WalkMemory()))
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := slow.GetGraph(ctx, &lookaheadv1.GetGraphRequest{Roots: []string{"t"}, Depth: u32(levels - 1)})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return r.f.WalkMemory() > share }, 10*time.Second, time.Millisecond,
		"the Expand reads ahead of the client up to its share")
	// Room for an unbounded Expand to read on: the origin has all 60
	// levels ready.
	time.Sleep(200 * time.Millisecond)

	n, err := drain(s)
	require.NoError(t, err)
	assert.Equal(t, levels, n, "every level arrives once the client reads")
	close(stop)
	<-watched
	assert.LessOrEqual(t, peak.Load(), share+message, "held: at most the share and one message")
	assert.Equal(t, int64(0), r.f.WalkMemory(), "nothing held after the walk")
}

// TestWalkHeldBackEndsWithItsClient: a walk whose Expand waits for its
// client to read ends when the client goes away, and holds nothing after.
func TestWalkHeldBackEndsWithItsClient(t *testing.T) {
	const payload, share = 32 << 10, 128 << 10
	o := origintest.New()
	o.Misbehave(origintest.Misbehaviour{Generate: tree(1, payload)})
	r := newHostileRigWith(t, o, origin.Config{}, Config{MaxDepth: 60, StreamBytes: share, MaxWalks: 1})
	slow := lookaheadv1.NewSidecarServiceClient(r.dial(grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10)))
	ctx, cancel := context.WithCancel(context.Background())
	_, err := slow.GetGraph(ctx, &lookaheadv1.GetGraphRequest{Roots: []string{"t"}, Depth: u32(59)})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return r.f.WalkMemory() > share }, 10*time.Second, time.Millisecond)
	cancel()
	assert.Eventually(t, func() bool { return r.f.WalkMemory() == 0 }, 10*time.Second, time.Millisecond,
		"the walk ended and released what its Expand held")
}
