package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/near"
	"github.com/lookahead-dev/lookahead/internal/prefetch"
)

// TestSubscribersThatNeverReadHoldAtMostTheQueueBytes: near-cache
// subscribers with the largest budget never read their streams while
// their reads (through another connection) make the sidecar prefetch, and
// so push, 1200 objects (about 400 KB, more than a stream's flow-control
// window and one message of events). What their queues hold stays within
// the hub's QueueBytes, where each would otherwise hold everything pushed
// since it stopped reading, objects the cache may have let go of; the
// reads are all answered.
func TestSubscribersThatNeverReadHoldAtMostTheQueueBytes(t *testing.T) {
	const roots, fanout, limit = 300, 4, 32 << 10
	var objs []*graph.Object
	var ids []string
	for i := range roots {
		root := &graph.Object{ID: fmt.Sprintf("r%d", i), Version: 1, Type: "Root"}
		for j := range fanout {
			kid := &graph.Object{ID: fmt.Sprintf("r%d.%d", i, j), Version: 1, Type: "Kid", Payload: make([]byte, 256)}
			root.Refs = append(root.Refs, graph.Ref{Field: "kid", ID: kid.ID})
			objs = append(objs, kid)
		}
		objs = append(objs, root)
		ids = append(ids, root.ID)
	}
	r := newRig(t, objs, rigOptions{engine: prefetch.Config{Mode: prefetch.ModeStatic}, planner: prefetch.Static{Depth: 1},
		near: near.Config{QueueBytes: limit}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A fixed flow-control window: gRPC's own grows with the bandwidth
	// measured, and over memory it would take all the pushes in.
	slow := lookaheadv1.NewSidecarServiceClient(r.dial(grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10)))
	const subscribers = 5
	var subs []string
	for range subscribers {
		s, err := slow.Subscribe(ctx, &lookaheadv1.SubscribeRequest{BudgetBytes: 1 << 62, ClientName: "never reads"})
		require.NoError(t, err)
		hello, err := s.Recv() // the hello, then nothing
		require.NoError(t, err)
		subs = append(subs, hello.GetEvents()[0].GetHello().GetSubscriberId())
	}
	reader := lookaheadv1.NewSidecarServiceClient(r.dial())
	for i, per := 0, roots/subscribers; i < roots; i += per {
		as := metadata.AppendToOutgoingContext(ctx, SubscriberHeader, subs[i/per]) // what is below is pushed to it
		resp, err := reader.BatchGet(as, &lookaheadv1.BatchGetRequest{Ids: ids[i : i+per]})
		require.NoError(t, err)
		require.Len(t, resp.GetResults(), per, "the reads are answered")
	}
	require.Eventually(t, func() bool {
		for _, o := range objs {
			if got, _ := r.cache.Peek(o.ID); got == nil {
				return false
			}
		}
		return true
	}, 20*time.Second, 5*time.Millisecond, "every child prefetched, so pushed")
	assert.LessOrEqual(t, sample(t, r.reg, "lookahead_near_queued_bytes"), float64(limit))
	assert.Positive(t, sample(t, r.reg, "lookahead_near_push_dropped_total"), "pushes beyond the limit were dropped")
}

// sample is the value of the gauge or counter name in reg, summed over its
// labels.
func sample(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	return sampleWhere(t, reg, name, "", "")
}

// sampleWhere is sample of the series whose label is value; "" = all.
func sampleWhere(t *testing.T, reg prometheus.Gatherer, name, label, value string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	require.NoError(t, err)
	var v float64
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if label == "" || slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == label && l.GetValue() == value }) {
				v += m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
	}
	return v
}

// TestSubscriberReadingManyLongIDsIsFlushed: a near-cache subscriber reads
// a thousand ids of 1 KiB that do not exist, a hundred at a time, each
// read tracking its ids before it is answered. What the hub tracks stays
// within its HeldBytes (and one id), the subscriber is told to flush and
// start over, and the reads are answered.
func TestSubscriberReadingManyLongIDsIsFlushed(t *testing.T) {
	const limit = 64 << 10
	r := newRig(t, taskTree(t, 1, 1, 1), rigOptions{engine: modeOff, near: near.Config{HeldBytes: limit}})
	s := subscribe(t, r, 0)
	for i := range 10 {
		ids := make([]string, 100)
		for j := range ids {
			ids[j] = fmt.Sprintf("%03d-%03d-%s", i, j, strings.Repeat("x", 1000))
		}
		resp, err := r.client.BatchGet(s.ctx(), &lookaheadv1.BatchGetRequest{Ids: ids})
		require.NoError(t, err)
		assert.Len(t, resp.GetMissingIds(), 100)
		require.LessOrEqual(t, sample(t, r.reg, "lookahead_near_held_bytes"), float64(limit+1008+48))
	}
	assert.Equal(t, "tracking limit", s.next().GetFlush().GetReason())
}

// TestSubscribersBeyondTheLimitAreRefused: with MaxSubscribers 2, a third
// Subscribe is refused RESOURCE_EXHAUSTED naming the limit (every
// prediction and change visits every subscriber), and is accepted once one
// of the two has gone.
func TestSubscribersBeyondTheLimitAreRefused(t *testing.T) {
	r := newRig(t, taskTree(t, 1, 1, 1), rigOptions{engine: modeOff, near: near.Config{MaxSubscribers: 2}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, err := r.client.Subscribe(ctx, &lookaheadv1.SubscribeRequest{})
	require.NoError(t, err)
	_, err = first.Recv()
	require.NoError(t, err)
	subscribe(t, r, 0)
	third := func() error {
		s, err := r.client.Subscribe(ctx, &lookaheadv1.SubscribeRequest{})
		if err == nil {
			_, err = s.Recv()
		}
		return err
	}
	err = third()
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	assert.Equal(t, "2 near-cache subscribers, the limit: retry later", status.Convert(err).Message())
	cancel()
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	assert.Eventually(t, func() bool { return third() == nil }, 10*time.Second, 10*time.Millisecond, "room once the first has gone")
}

// TestNearMessagesAClientDoesNotReadStayCounted: a near-cache subscriber
// that never reads is pushed a hundred objects of 4 KiB, more than its
// stream's flow-control window. The message carrying them is taken from
// its queue and waits in gRPC, written only as far as the window lets it:
// its objects are in the sidecar's memory still, and count against the
// subscriber's budget and the hub's QueueBytes (lookahead_near_queued_bytes)
// until gRPC has written them. They stopped counting once taken, so a
// subscriber could hold, besides its budget of queued pushes, as much
// again taken, and all of them together more than QueueBytes.
func TestNearMessagesAClientDoesNotReadStayCounted(t *testing.T) {
	const kids = 100
	root := &graph.Object{ID: "r", Version: 1, Type: "Root"}
	objs := []*graph.Object{root}
	var pushed int64
	for i := range kids {
		kid := &graph.Object{ID: fmt.Sprintf("r.%d", i), Version: 1, Type: "Kid", Payload: make([]byte, 4<<10)}
		root.Refs = append(root.Refs, graph.Ref{Field: "kid", ID: kid.ID})
		objs = append(objs, kid)
		pushed += kid.Size()
	}
	r := newRig(t, objs, rigOptions{engine: prefetch.Config{Mode: prefetch.ModeStatic}, planner: prefetch.Static{Depth: 1}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	slow := lookaheadv1.NewSidecarServiceClient(r.dial(grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10)))
	s, err := slow.Subscribe(ctx, &lookaheadv1.SubscribeRequest{BudgetBytes: 1 << 62, ClientName: "never reads"})
	require.NoError(t, err)
	hello, err := s.Recv() // the hello, then nothing
	require.NoError(t, err)
	as := metadata.AppendToOutgoingContext(ctx, SubscriberHeader, hello.GetEvents()[0].GetHello().GetSubscriberId())
	_, err = r.client.BatchGet(as, &lookaheadv1.BatchGetRequest{Ids: []string{root.ID}}) // what is below is pushed to it
	require.NoError(t, err)
	require.Eventually(t, func() bool { return sampleWhere(t, r.reg, "lookahead_near_events_total", "kind", "push") == kids },
		20*time.Second, 5*time.Millisecond, "every child pushed and taken from the queue")

	// What the window let out may have been written, and given back: the
	// rest is counted.
	assert.GreaterOrEqual(t, sample(t, r.reg, "lookahead_near_queued_bytes"), float64(pushed-64<<10),
		"taken and not written, %d bytes pushed", pushed)
	assert.LessOrEqual(t, sample(t, r.reg, "lookahead_near_queued_bytes"), float64(pushed))
}
