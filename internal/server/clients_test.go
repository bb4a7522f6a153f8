package server

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/metrics"
	"github.com/lookahead-dev/lookahead/internal/originserver"
	"github.com/lookahead-dev/lookahead/internal/prefetch"
)

// watchedScheduler records the client of every answered demand and every
// client that went.
type watchedScheduler struct {
	Scheduler
	mu          sync.Mutex
	after, gone []*prefetch.Client
}

func (w *watchedScheduler) After(ctx context.Context, a *fetch.Answer, h prefetch.Hint) {
	w.mu.Lock()
	w.after = append(w.after, prefetch.ClientOf(ctx))
	w.mu.Unlock()
	w.Scheduler.After(ctx, a, h)
}

func (w *watchedScheduler) Gone(c *prefetch.Client) {
	w.mu.Lock()
	w.gone = append(w.gone, c)
	w.mu.Unlock()
	w.Scheduler.Gone(c)
}

func (w *watchedScheduler) seen() (after, gone []*prefetch.Client) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.after), slices.Clone(w.gone)
}

// Each client connection is one prefetch.Client: its requests carry it to
// the scheduler, another connection's carry another, and the scheduler is
// told that it went when the connection ends, not before.
func TestEachConnectionIsAClientUntilItCloses(t *testing.T) {
	w := &watchedScheduler{}
	r := newRig(t, taskTree(t, 1, 2, 2), rigOptions{wrap: func(s Scheduler) Scheduler { w.Scheduler = s; return w }})
	conn := r.dial()
	a, b := lookaheadv1.NewSidecarServiceClient(conn), r.client
	get := func(c lookaheadv1.SidecarServiceClient, id string) {
		_, err := c.Get(context.Background(), &lookaheadv1.GetRequest{Id: id})
		require.NoError(t, err)
	}
	get(a, "task-0")
	get(a, "task-0.1")
	get(b, "task-0.2")
	after, gone := w.seen()
	require.Len(t, after, 3)
	assert.NotNil(t, after[0])
	assert.Same(t, after[0], after[1], "one connection, one client")
	assert.NotSame(t, after[0], after[2], "another connection, another client")
	assert.Empty(t, gone, "no connection ended")

	require.NoError(t, conn.Close())
	require.Eventually(t, func() bool { _, gone = w.seen(); return len(gone) > 0 }, 10*time.Second, time.Millisecond,
		"the scheduler hears that a's client went")
	assert.Equal(t, []*prefetch.Client{after[0]}, gone, "a's client, and only it")
	get(b, "task-0")
	after, _ = w.seen()
	assert.Same(t, after[2], after[3], "b's connection goes on as the same client")
}

// Closing the connection whose Get scheduled speculation cuts that
// speculation: the job below the object read is at the origin (a slow one)
// when the client goes, and its call ends there, having brought nothing.
func TestClosedConnectionsSpeculationIsCut(t *testing.T) {
	var sched *prefetch.Scheduler
	r := newRig(t, taskTree(t, 1, 2, 2), rigOptions{
		planner: prefetch.Static{Depth: 1},
		origin:  originserver.Config{Latency: 2 * time.Second},
		wrap:    func(s Scheduler) Scheduler { sched = s.(*prefetch.Scheduler); return s },
	})
	conn := r.dial()
	_, err := lookaheadv1.NewSidecarServiceClient(conn).Get(context.Background(), &lookaheadv1.GetRequest{Id: "task-0"})
	require.NoError(t, err)
	require.NoError(t, conn.Close()) // the job for task-0's children is queued or at the origin, for 2 s
	gone := r.m.PrefetchCancelled.WithLabelValues(metrics.CancelledClientGone)
	require.Eventually(t, func() bool { return testutil.ToFloat64(gone) == 1 }, 10*time.Second, time.Millisecond)
	sched.Idle()
	assert.Zero(t, testutil.ToFloat64(r.m.PrefetchIssued), "the cut speculation brought nothing")
	assert.Zero(t, testutil.ToFloat64(r.m.PrefetchCancelled.WithLabelValues(metrics.CancelledOvertaken)))
}

// A request finds its connection's Client at no cost: a hit on a
// connection that is a Client allocates no more than one on a connection
// to the same service that is not. (A gRPC stats handler, which found it
// before, made every RPC 17 allocations dearer: see Server.Credentials.)
func TestFindingTheClientCostsARequestNothing(t *testing.T) {
	r := newRig(t, taskTree(t, 1, 2, 2), rigOptions{engine: modeOff})
	_, dial := serveDialer(t, func(gs *grpc.Server) { lookaheadv1.RegisterSidecarServiceServer(gs, r.svc) },
		Interceptors(metrics.NewGRPCServer(prometheus.NewRegistry()))...)
	plain := lookaheadv1.NewSidecarServiceClient(dial())
	hit := func(c lookaheadv1.SidecarServiceClient) func() {
		return func() {
			_, err := c.Get(context.Background(), &lookaheadv1.GetRequest{Id: "task-0"})
			require.NoError(t, err)
		}
	}
	hit(r.client)() // cached, both connections up
	hit(plain)()
	client, none := testing.AllocsPerRun(200, hit(r.client)), testing.AllocsPerRun(200, hit(plain))
	t.Logf("allocations per hit: %.1f on a Client's connection, %.1f on another", client, none)
	assert.LessOrEqual(t, client, none+1)
}
