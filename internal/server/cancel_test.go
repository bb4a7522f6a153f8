package server

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

// stormCalls are the calls of a cancel storm, one per RPC the sidecar
// serves: each returns the call's error. Against a hung origin the reads
// and walks wait for it; Subscribe waits for events that never come; Put
// and Delete race their cancellation.
var stormCalls = map[string]func(ctx context.Context, c lookaheadv1.SidecarServiceClient) error{
	"Get": func(ctx context.Context, c lookaheadv1.SidecarServiceClient) error {
		_, err := c.Get(ctx, &lookaheadv1.GetRequest{Id: "a"})
		return err
	},
	"BatchGet": func(ctx context.Context, c lookaheadv1.SidecarServiceClient) error {
		_, err := c.BatchGet(ctx, &lookaheadv1.BatchGetRequest{Ids: []string{"a", "c"}})
		return err
	},
	"GetGraph": func(ctx context.Context, c lookaheadv1.SidecarServiceClient) error { // the walk's Expand hangs
		return firstError(ctx, c, "g")
	},
	"GetGraph depth 0": func(ctx context.Context, c lookaheadv1.SidecarServiceClient) error { // no Expand: a demand BatchGet
		s, err := c.GetGraph(ctx, &lookaheadv1.GetGraphRequest{Roots: []string{"c"}, Depth: u32(0)})
		if err != nil {
			return err
		}
		_, err = drain(s)
		return err
	},
	"Subscribe": func(ctx context.Context, c lookaheadv1.SidecarServiceClient) error {
		s, err := c.Subscribe(ctx, &lookaheadv1.SubscribeRequest{ClientName: "storm"})
		for err == nil {
			_, err = s.Recv()
		}
		return err
	},
	"Put": func(ctx context.Context, c lookaheadv1.SidecarServiceClient) error {
		_, err := c.Put(ctx, &lookaheadv1.PutRequest{Object: &lookaheadv1.Object{Id: "w"}})
		return err
	},
	"Delete": func(ctx context.Context, c lookaheadv1.SidecarServiceClient) error {
		_, err := c.Delete(ctx, &lookaheadv1.DeleteRequest{Id: "w"})
		return err
	},
}

// Clients that give up while the origin hangs leave nothing behind, on
// every RPC: every goroutine a call started ends with it (goleak, against
// those running before the storm), no handler is still running, no origin
// call is in flight, no near subscriber is left, and no GetGraph place or
// stream memory is still held.
func TestCancelStormLeavesNothingBehind(t *testing.T) {
	const n = 40
	o := origintest.New(&graph.Object{ID: "a"}, &graph.Object{ID: "b"}, &graph.Object{ID: "c"},
		&graph.Object{ID: "g", Refs: []graph.Ref{{Field: "f", ID: "b"}}})
	r := newHostileRigWith(t, o, origin.Config{}, Config{MaxWalks: 4 * n})
	// Both connections up first: their own goroutines are not the calls'.
	_, err := r.get("b")
	require.NoError(t, err)
	o.Misbehave(origintest.Misbehaviour{Hang: true})
	before := goleak.IgnoreCurrent()
	// One walk's Expand hangs first: the storm's walks of g join it (a
	// walk cancelled before its Expand left would leave g to a BatchGet).
	expands, batches := o.Calls("Expand"), o.Calls("BatchGet")
	wctx, cancel := context.WithCancel(context.Background())
	walked := make(chan error, 1)
	go func() { walked <- stormCalls["GetGraph"](wctx, r.client) }()
	require.Eventually(t, func() bool { return o.Calls("Expand") > expands }, 10*time.Second, time.Millisecond)

	storm(t, r.client, n, func() bool { return o.Calls("BatchGet") > batches })
	cancel()
	assert.Equal(t, codes.Canceled, status.Code(<-walked))
	var left string
	ok := assert.Eventually(t, func() bool {
		left = leftBehind(t, r)
		return left == ""
	}, 10*time.Second, 10*time.Millisecond)
	if !ok {
		t.Fatalf("left behind: %s", left)
	}
	if err := goleak.Find(before); err != nil {
		t.Fatalf("goroutines the calls started are still running: %v", err)
	}
}

// storm makes n calls of every RPC at once; one in two has a deadline of
// a few milliseconds, the others are cancelled together once hung reaches
// true (the calls have reached the hung origin) or after 10 s.
func storm(t *testing.T, c lookaheadv1.SidecarServiceClient, n int, hung func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for name, call := range stormCalls {
		for i := range n {
			wg.Go(func() {
				ctx, cancel := ctx, context.CancelFunc(func() {})
				if i%2 == 0 {
					ctx, cancel = context.WithTimeout(ctx, time.Duration(i)*time.Millisecond)
				}
				defer cancel()
				err := call(ctx, c)
				if name != "Put" && name != "Delete" {
					assert.Contains(t, []codes.Code{codes.Canceled, codes.DeadlineExceeded}, status.Code(err), "%s: %v", name, err)
				}
			})
		}
	}
	assert.Eventually(t, hung, 10*time.Second, time.Millisecond, "the storm's calls reached the origin and hung there")
	cancel()
	wg.Wait()
}

// leftBehind describes what the rig's sidecar still holds for calls, or
// is empty.
func leftBehind(t *testing.T, r *hostileRig) string {
	t.Helper()
	var held []string
	for _, rpc := range []string{"BatchGet", "Expand"} {
		if n := testutil.ToFloat64(r.m.OriginInFlight.WithLabelValues(rpc)); n != 0 {
			held = append(held, fmt.Sprintf("%v origin %s calls in flight", n, rpc))
		}
	}
	for method, n := range handlersRunning(t, r.reg) {
		held = append(held, fmt.Sprintf("%v %s handlers running", n, method))
	}
	if n := gathered(t, r.reg, "lookahead_near_subscribers"); n != 0 {
		held = append(held, fmt.Sprintf("%v near subscribers", n))
	}
	if n := len(r.svc.walks); n != 0 {
		held = append(held, fmt.Sprintf("%d GetGraph places", n))
	}
	if n := r.svc.StreamMemory(); n != 0 {
		held = append(held, fmt.Sprintf("%d bytes of stream memory", n))
	}
	return fmt.Sprint(held)[1 : len(fmt.Sprint(held))-1]
}

// handlersRunning is, by method, the calls the server started and has not
// finished handling (grpc_server_started_total less handled), where any.
func handlersRunning(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	require.NoError(t, err)
	running := map[string]float64{}
	for _, f := range fams {
		sign := map[string]float64{"grpc_server_started_total": 1, "grpc_server_handled_total": -1}[f.GetName()]
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "grpc_method" {
					running[l.GetValue()] += sign * m.GetCounter().GetValue()
				}
			}
		}
	}
	for method, n := range running {
		if n == 0 {
			delete(running, method)
		}
	}
	return running
}

// gathered is the value of the gauge name in reg (summed over its labels).
func gathered(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	require.NoError(t, err)
	var n float64
	for _, f := range fams {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				n += m.GetGauge().GetValue()
			}
		}
	}
	return n
}
