package lookahead

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// heldClient is a client whose near cache holds n task objects under a live
// subscription, without a sidecar: what an in-process hit costs.
func heldClient(n int) (*Client, []string) {
	s := newStore(64 << 20)
	s.up("bench", time.Hour, 0)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "task-" + string(rune('a'+i%26)) + "-" + time.Duration(i).String()
		s.putLocked(&lookaheadv1.Object{Id: ids[i], Version: 1, Type: "Task", Payload: []byte("0123456789"),
			Refs: []*lookaheadv1.Ref{{Field: "subtasks", Id: "x"}}}, false)
	}
	return &Client{near: &nearCache{store: s}}, ids
}

func TestNearHitAllocatesNothing(t *testing.T) {
	c, ids := heldClient(100)
	ctx := context.Background()
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		o, st, err := c.Get(ctx, ids[i%len(ids)], nil)
		if err != nil || !st.Near || o == nil {
			t.Fatal("not a near hit")
		}
		i++
	})
	assert.Zero(t, allocs, "the returned object is shared, not copied")
}

func TestStoreRefusesWhatIsOlderThanItKnows(t *testing.T) {
	s := newStore(1 << 20)
	s.up("s", time.Hour, 0)
	obj := func(v uint64) *lookaheadv1.Object { return &lookaheadv1.Object{Id: "x", Version: v} }
	tk := s.takeTicket()
	assert.True(t, s.fill(obj(2), tk, false))
	assert.False(t, s.fill(obj(1), tk, false), "an older copy never replaces a newer one")
	s.floor("x", 5, false, false)
	assert.Nil(t, s.get("x"))
	assert.False(t, s.fill(obj(4), tk, false), "below the floor")
	assert.True(t, s.fill(obj(5), tk, false))
	s.floor("x", 5, true, false)
	assert.False(t, s.fill(obj(5), tk, false), "deleted at 5")
	s.floor("y", 0, true, true)
	assert.False(t, s.fill(&lookaheadv1.Object{Id: "y", Version: 99}, tk, false), "pending: every copy refused")
	s.floor("y", 7, true, false)
	assert.True(t, s.fill(&lookaheadv1.Object{Id: "y", Version: 8}, tk, false), "the stream resolved it")
	s.flush(true)
	assert.False(t, s.fill(obj(9), tk, false), "a ticket from before a flush")
	s.flush(false)
	assert.Empty(t, s.takeTicket().subscriber, "no subscription, no tracked reads")
}

func TestStoreRefusesAReadInFlightAcrossAnInvalidationWithoutVersion(t *testing.T) {
	s := newStore(1 << 20)
	s.up("s", time.Hour, 0)
	x := &lookaheadv1.Object{Id: "x", Version: 3}
	tk := s.takeTicket()
	s.floor("x", 0, false, false) // the sidecar's copy expired, or was invalidated, while the read was out
	assert.False(t, s.fill(x, tk, false), "the read may bring back the dropped copy")
	assert.True(t, s.fill(x, s.takeTicket(), false), "a read started after it is kept: no floor was set")
	s.floor("x", 0, false, false)
	assert.Nil(t, s.get("x"), "dropped")
}

func TestStoreStaysWithinItsBudgetAndKeepsWhatIsHit(t *testing.T) {
	s := newStore(10 * (entryOverhead + 16))
	s.up("s", time.Hour, 0)
	put := func(id string) { s.putLocked(&lookaheadv1.Object{Id: id, Version: 1}, false) }
	put("hot")
	for i := 0; i < 30; i++ {
		s.get("hot")
		put(string(rune('a' + i)))
	}
	assert.LessOrEqual(t, s.bytes, s.budget)
	assert.NotNil(t, s.get("hot"), "second chance keeps what is read")
}

func TestStoreTrustsNothingPastItsLeaseOrMaxAge(t *testing.T) {
	s := newStore(1 << 20)
	s.up("s", time.Hour, time.Nanosecond)
	s.putLocked(&lookaheadv1.Object{Id: "x", Version: 1}, false)
	time.Sleep(time.Millisecond)
	assert.Nil(t, s.get("x"), "older than max age")
	s.up("s", time.Hour, 0)
	s.lastHeard.Store(time.Now().Add(-2 * time.Hour).UnixNano())
	assert.Nil(t, s.get("x"), "silent past the lease")
}

// BenchmarkNearHit is one Get answered by the near cache; it also reports
// the median of sampled single calls.
func BenchmarkNearHit(b *testing.B) {
	c, ids := heldClient(10000)
	ctx := context.Background()
	b.ReportAllocs()
	var samples []time.Duration
	i := 0
	for b.Loop() {
		id := ids[i%len(ids)]
		if i%64 == 0 {
			start := time.Now()
			c.Get(ctx, id, nil)
			samples = append(samples, time.Since(start))
		} else {
			c.Get(ctx, id, nil)
		}
		i++
	}
	if len(samples) > 0 {
		sort.Slice(samples, func(a, b int) bool { return samples[a] < samples[b] })
		b.ReportMetric(float64(samples[len(samples)/2].Nanoseconds()), "p50-ns")
	}
}

// reportingRPC hands over the metadata of the BatchGets it is sent.
type reportingRPC struct {
	lookaheadv1.SidecarServiceClient
	sent chan metadata.MD
	ids  chan []string
}

func (r reportingRPC) BatchGet(ctx context.Context, in *lookaheadv1.BatchGetRequest, _ ...grpc.CallOption) (*lookaheadv1.BatchGetResponse, error) {
	md, _ := metadata.FromOutgoingContext(ctx)
	r.sent <- md
	r.ids <- in.GetIds()
	return &lookaheadv1.BatchGetResponse{}, nil
}

// The first read of a pushed object is reported as a report, tracked for
// the subscription, which the sidecar answers without objects.
func TestUsedPushesAreReportedAsReports(t *testing.T) {
	rpc := reportingRPC{sent: make(chan metadata.MD, 1), ids: make(chan []string, 1)}
	n := &nearCache{store: newStore(1 << 20), rpc: rpc, reported: make(chan struct{})}
	n.up("sub-1", time.Minute, 0)
	n.push(&lookaheadv1.Object{Id: "a", Version: 1})
	ctx, cancel := context.WithCancel(context.Background())
	go n.report(ctx)
	defer func() { cancel(); <-n.reported }()
	require.NotNil(t, n.get("a"))
	select {
	case md := <-rpc.sent:
		assert.Equal(t, []string{"sub-1"}, md.Get(subscriberHeader))
		assert.Equal(t, []string{"used"}, md.Get(reportHeader))
		assert.Equal(t, []string{"a"}, <-rpc.ids)
	case <-time.After(5 * time.Second):
		t.Fatal("the read of a pushed object was not reported")
	}
}
