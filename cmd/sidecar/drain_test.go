package main

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
