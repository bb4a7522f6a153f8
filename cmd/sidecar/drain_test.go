package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

// A stop completes whatever the origin and the clients do: requests held by
// a hung origin (a Get, a GetGraph whose Expand never answers) are cut at
// --drain-timeout, and run returns.
func TestStopCompletesWithAHungOrigin(t *testing.T) {
	o := origintest.New(&graph.Object{ID: "a", Refs: []graph.Ref{{Field: "f", ID: "b"}}}, &graph.Object{ID: "b"})
	o.Misbehave(origintest.Misbehaviour{Hang: true})
	addr, stop := startSidecar(t, "--origin", o.StartTCP(t), "--origin-timeout", "0")
	c := dialSidecar(t, addr)
	calls := make(chan error, 2)
	go func() {
		_, err := c.Get(context.Background(), &lookaheadv1.GetRequest{Id: "a"})
		calls <- err
	}()
	go func() {
		s, err := c.GetGraph(context.Background(), &lookaheadv1.GetGraphRequest{Roots: []string{"b"}})
		if err == nil {
			_, err = s.Recv()
		}
		calls <- err
	}()
	require.Eventually(t, func() bool { return o.Calls("BatchGet")+o.Calls("Expand") >= 2 }, 30*time.Second, 10*time.Millisecond)

	stop() // SIGTERM; fails the test if the sidecar does not stop
	for range 2 {
		err := <-calls
		assert.Contains(t, []codes.Code{codes.Unavailable, codes.Canceled}, status.Code(err), "%v", err)
	}
}

// A stop completes with every kind of client in flight at once, against an
// origin that answers each message late and has no end of objects: a
// near-cache subscriber that never reads what it is pushed, a GetGraph
// whose client never reads, a client that opened a GetGraph and went away,
// and Gets and BatchGets of objects not cached yet, with speculation
// running below them. Every call ends (OK, or cut at --drain-timeout), run
// returns, and TestMain finds no goroutine left.
func TestStopCompletesWithEverythingInFlight(t *testing.T) {
	o := origintest.New()
	o.Misbehave(origintest.Misbehaviour{Generate: origintest.Endless(4), Delay: 50 * time.Millisecond})
	addr, stop := startSidecar(t, "--origin", o.StartTCP(t))
	c := dialSidecar(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	depth := uint32(10)
	sub, err := c.Subscribe(ctx, &lookaheadv1.SubscribeRequest{BudgetBytes: 1 << 30})
	require.NoError(t, err)
	_, err = sub.Recv() // the hello; nothing after
	require.NoError(t, err)
	walk, err := c.GetGraph(ctx, &lookaheadv1.GetGraphRequest{Roots: []string{"w"}, Depth: &depth})
	require.NoError(t, err)
	vctx, vanish := context.WithCancel(ctx)
	_, err = c.GetGraph(vctx, &lookaheadv1.GetGraphRequest{Roots: []string{"v"}, Depth: &depth})
	require.NoError(t, err)
	vanish()

	const gets = 40
	calls := make(chan error, gets+1)
	for i := range gets {
		go func() {
			_, err := c.Get(ctx, &lookaheadv1.GetRequest{Id: fmt.Sprintf("g%d", i)})
			calls <- err
		}()
	}
	go func() {
		ids := make([]string, 100)
		for i := range ids {
			ids[i] = fmt.Sprintf("b%d", i)
		}
		_, err := c.BatchGet(ctx, &lookaheadv1.BatchGetRequest{Ids: ids})
		calls <- err
	}()
	require.Eventually(t, func() bool { return o.Calls("BatchGet") > 0 && o.Calls("Expand") > 0 }, 30*time.Second, 10*time.Millisecond)

	stop() // SIGTERM; fails the test if the sidecar does not stop
	for range gets + 1 {
		err := <-calls
		assert.Contains(t, []codes.Code{codes.OK, codes.Unavailable, codes.Canceled}, status.Code(err), "%v", err)
	}
	_, err = walk.Recv()
	for err == nil {
		_, err = walk.Recv()
	}
	assert.Contains(t, []codes.Code{codes.Unavailable, codes.Canceled}, status.Code(err), "%v", err)
}
