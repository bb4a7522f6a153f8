package server

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

// Clients that give up while the origin hangs leave nothing behind: every
// goroutine a call started ends with it, and the in-flight gauges return
// to 0.
func TestCancelStormLeavesNothingBehind(t *testing.T) {
	o := origintest.New(&graph.Object{ID: "a", Refs: []graph.Ref{{Field: "f", ID: "b"}}}, &graph.Object{ID: "b"})
	r := newHostileRig(t, o, origin.Config{})
	// Both connections up first: their own goroutines are not the calls'.
	_, err := r.client.Get(context.Background(), &lookaheadv1.GetRequest{Id: "b"})
	require.NoError(t, err)
	o.Misbehave(origintest.Misbehaviour{Hang: true})
	before := callGoroutines()

	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if i%2 == 0 {
				_, _ = r.client.Get(ctx, &lookaheadv1.GetRequest{Id: "a"})
				return
			}
			stream, err := r.client.GetGraph(ctx, &lookaheadv1.GetGraphRequest{Roots: []string{"a", "b"}})
			if err == nil {
				_, _ = stream.Recv()
			}
		}()
	}
	wg.Wait()
	var inFlight float64
	var now int
	ok := assert.Eventually(t, func() bool {
		inFlight = 0
		for _, rpc := range []string{"BatchGet", "Expand"} {
			inFlight += testutil.ToFloat64(r.m.OriginInFlight.WithLabelValues(rpc))
		}
		now = callGoroutines()
		return inFlight == 0 && now <= before
	}, 10*time.Second, 10*time.Millisecond)
	if !ok {
		t.Fatalf("origin calls in flight %v, goroutines of calls %d (before %d):\n%s", inFlight, now, before, strings.Join(callStacks(), "\n\n"))
	}
}

// callGoroutines counts the goroutines running lookahead's code for calls:
// those whose stack is in this module, less the ones that live as long as
// the rig (the scheduler's workers, the servers' accept loops). gRPC's own
// per-connection goroutines come and go with its connections, not calls.
func callGoroutines() int { return len(callStacks()) }

func callStacks() []string {
	buf := make([]byte, 4<<20)
	var out []string
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "lookahead-dev/lookahead/") && !strings.Contains(g, "Scheduler).work") &&
			!strings.Contains(g, "Accept") && !strings.Contains(g, "testing.") && !strings.Contains(g, "TestCancelStorm") {
			out = append(out, g)
		}
	}
	return out
}
