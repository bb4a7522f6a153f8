package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/near"
	"github.com/lookahead-dev/lookahead/internal/prefetch"
)

// subscription is an open Subscribe stream read event by event.
type subscription struct {
	t      *testing.T
	stream lookaheadv1.SidecarService_SubscribeClient
	queue  []*lookaheadv1.NearEvent
	id     string
}

func subscribe(t *testing.T, r *rig, budget uint64) *subscription {
	t.Helper()
	// A deadline: an event that never comes fails the test, not the package.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	st, err := r.client.Subscribe(ctx, &lookaheadv1.SubscribeRequest{BudgetBytes: budget, ClientName: "test"})
	require.NoError(t, err)
	s := &subscription{t: t, stream: st}
	hello := s.next().GetHello()
	require.NotNil(t, hello, "the first event is the hello")
	require.NotEmpty(t, hello.GetSubscriberId())
	require.Positive(t, hello.GetHeartbeatMillis())
	s.id = hello.GetSubscriberId()
	return s
}

// next returns the next event that is not a heartbeat.
func (s *subscription) next() *lookaheadv1.NearEvent {
	s.t.Helper()
	for {
		for len(s.queue) > 0 {
			ev := s.queue[0]
			s.queue = s.queue[1:]
			if ev.GetHeartbeat() == nil {
				return ev
			}
		}
		resp, err := s.stream.Recv()
		require.NoError(s.t, err)
		s.queue = resp.GetEvents()
	}
}

func (s *subscription) ctx() context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), SubscriberHeader, s.id)
}

func TestSubscriberHearsOfWritesToWhatItRead(t *testing.T) {
	r := newRig(t, taskTree(t, 1, 2, 2), rigOptions{engine: modeOff})
	s := subscribe(t, r, 0)
	_, err := r.client.Get(s.ctx(), &lookaheadv1.GetRequest{Id: "task-0.1"})
	require.NoError(t, err)
	_, err = r.client.BatchGet(s.ctx(), &lookaheadv1.BatchGetRequest{Ids: []string{"task-0.2"}})
	require.NoError(t, err)
	// Another client's writes: untracked, but seen by the subscriber.
	put, err := r.client.Put(context.Background(), &lookaheadv1.PutRequest{Object: &lookaheadv1.Object{Id: "task-0.1", Type: "Task"}})
	require.NoError(t, err)
	_, err = r.client.Put(context.Background(), &lookaheadv1.PutRequest{Object: &lookaheadv1.Object{Id: "task-0", Type: "Task"}})
	require.NoError(t, err, "not read by the subscriber: not sent")
	_, err = r.client.Invalidate(context.Background(), &lookaheadv1.InvalidateRequest{Ids: []string{"task-0.2"}})
	require.NoError(t, err)
	_, err = r.client.Delete(context.Background(), &lookaheadv1.DeleteRequest{Id: "task-0.2"})
	require.NoError(t, err)

	inv := s.next().GetInvalidation()
	assert.Equal(t, "task-0.1", inv.GetId())
	assert.Equal(t, put.GetVersion(), inv.GetVersion())
	inv = s.next().GetInvalidation()
	assert.Equal(t, "task-0.2", inv.GetId())
	assert.Zero(t, inv.GetVersion(), "an Invalidate has no version")
	inv = s.next().GetInvalidation()
	assert.Equal(t, "task-0.2", inv.GetId())
	assert.True(t, inv.GetDeleted())
}

func TestSubscriberIsPushedWhatTheSidecarPrefetchesForIt(t *testing.T) {
	r := newRig(t, taskTree(t, 1, 1, 3), rigOptions{engine: prefetch.Config{Mode: prefetch.ModeStatic}, planner: prefetch.Static{Depth: 1}})
	s, other := subscribe(t, r, 1<<20), subscribe(t, r, 1<<20)
	// The subscriber's read: what it demanded it reads itself, what the
	// scheduler prefetches below it is pushed to it.
	_, err := r.client.Get(s.ctx(), &lookaheadv1.GetRequest{Id: "task-0"})
	require.NoError(t, err)
	push := s.next().GetPush()
	require.NotNil(t, push)
	assert.Equal(t, "task-0.1", push.GetObject().GetId(), "the prefetched child, not the demanded root")
	assert.Contains(t, []string{"prefetch", "expand"}, push.GetReason())
	// What the subscriber reads itself is not pushed back to it.
	_, err = r.client.Get(s.ctx(), &lookaheadv1.GetRequest{Id: "task-0.2"})
	require.NoError(t, err)
	r.hub.Changed("task-0.2", 9, false)
	assert.Equal(t, "task-0.2", s.next().GetInvalidation().GetId())
	// Nor is the prediction for it pushed to another subscriber, which
	// read nothing it was below: the other's next event is the
	// invalidation of what it read, queued after the push would have been.
	_, err = r.client.Get(other.ctx(), &lookaheadv1.GetRequest{Id: "task-0.2"})
	require.NoError(t, err)
	r.hub.Changed("task-0.2", 10, false)
	assert.Equal(t, "task-0.2", other.next().GetInvalidation().GetId())
}

func TestSubscribeRefusesBadInput(t *testing.T) {
	r := newRig(t, taskTree(t, 1, 1, 1), rigOptions{engine: modeOff})
	st, err := r.client.Subscribe(context.Background(), &lookaheadv1.SubscribeRequest{ClientName: strings.Repeat("n", 129)})
	require.NoError(t, err)
	_, err = st.Recv()
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	assert.Contains(t, status.Convert(err).Message(), "client_name")
}

func TestSubscriberThatFallsBehindIsToldSo(t *testing.T) {
	r := newRig(t, taskTree(t, 1, 1, 1), rigOptions{engine: modeOff, near: near.Config{QueueEvents: 100}})
	s := subscribe(t, r, 0)
	// 2,000 invalidations of 1 KiB ids, queued while the client reads
	// nothing: more than the stream's flow-control window and the queue hold.
	ids := make([]string, 2000)
	for i := range ids {
		ids[i] = fmt.Sprintf("%04d-%s", i, strings.Repeat("x", 1000))
	}
	r.hub.Track(s.id, ids)
	for _, id := range ids {
		r.hub.Changed(id, 2, false) // never blocks
	}
	for {
		resp, err := s.stream.Recv()
		if err != nil {
			assert.Equal(t, codes.ResourceExhausted, status.Code(err))
			assert.Contains(t, status.Convert(err).Message(), "fell behind")
			return
		}
		require.NotEmpty(t, resp.GetEvents())
	}
}

// Only the demands of near-cache subscribers, not their reports of used
// pushes, are passed on as catching up with speculation.
func TestNearReadersHearsOnlySubscribers(t *testing.T) {
	var heard [][]string
	fn := NearReaders(func(_ context.Context, ids []string) { heard = append(heard, ids) })
	fn(context.Background(), []string{"a"})
	fn(metadata.NewIncomingContext(context.Background(), metadata.Pairs("other", "x")), []string{"b"})
	fn(metadata.NewIncomingContext(context.Background(), metadata.Pairs(SubscriberHeader, "1-x")), []string{"c"})
	fn(metadata.NewIncomingContext(context.Background(), metadata.Pairs(SubscriberHeader, "1-x", ReportHeader, "used")), []string{"d"})
	assert.Equal(t, [][]string{{"c"}}, heard, "a subscriber's read, not its report of reads")
}

// A report of used pushes is read like any BatchGet, so that the use moves
// speculation on, but answered without objects and with a header that says
// so.
func TestReportOfUsedPushesIsAnsweredWithoutObjects(t *testing.T) {
	r := newRig(t, taskTree(t, 1, 1, 3), rigOptions{engine: prefetch.Config{Mode: prefetch.ModeStatic}, planner: prefetch.Static{Depth: 1}})
	s := subscribe(t, r, 1<<20)
	_, err := r.client.Get(s.ctx(), &lookaheadv1.GetRequest{Id: "task-0"})
	require.NoError(t, err)
	require.Equal(t, "task-0.1", s.next().GetPush().GetObject().GetId())
	_, held := r.cache.Peek("task-0.2")
	require.False(t, held, "nothing read task-0.1 yet")

	ctx := metadata.AppendToOutgoingContext(s.ctx(), ReportHeader, "used")
	var header metadata.MD
	resp, err := r.client.BatchGet(ctx, &lookaheadv1.BatchGetRequest{Ids: []string{"task-0.1"}}, grpc.Header(&header))
	require.NoError(t, err)
	assert.Empty(t, resp.GetResults(), "the client has the object")
	assert.Empty(t, resp.GetMissingIds())
	assert.Equal(t, []string{"read"}, header.Get(ReportHeader), "a report's answer says it is one")
	require.Eventually(t, func() bool {
		o, held := r.cache.Peek("task-0.2")
		return held && o != nil
	}, 5*time.Second, time.Millisecond, "the reported use moved speculation below it")
	assert.Equal(t, "task-0.2", s.next().GetPush().GetObject().GetId())
}

// A report names objects the application holds: one the sidecar no longer
// holds is not fetched from the origin for it.
func TestReportDoesNotFetchWhatTheSidecarDropped(t *testing.T) {
	r := newRig(t, taskTree(t, 1, 1, 3), rigOptions{engine: prefetch.Config{Mode: prefetch.ModeOff}})
	s := subscribe(t, r, 1<<20)
	trips := func() float64 { return testutil.ToFloat64(r.m.OriginRoundTrips.WithLabelValues("BatchGet", "OK")) }
	before := trips()
	ctx := metadata.AppendToOutgoingContext(s.ctx(), ReportHeader, "used")
	_, err := r.client.BatchGet(ctx, &lookaheadv1.BatchGetRequest{Ids: []string{"task-0.1"}})
	require.NoError(t, err)
	_, held := r.cache.Peek("task-0.1")
	assert.False(t, held)
	assert.Equal(t, before, trips(), "no origin BatchGet for a report")
	_, err = r.client.BatchGet(s.ctx(), &lookaheadv1.BatchGetRequest{Ids: []string{"task-0.1"}})
	require.NoError(t, err)
	assert.Equal(t, before+1, trips(), "an ordinary read of it is fetched")
}
