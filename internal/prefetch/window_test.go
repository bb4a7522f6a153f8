package prefetch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lookahead-dev/lookahead/internal/origin"
)

func TestWindowHalvesOnShedAndGrowsByOnePerWindow(t *testing.T) {
	w := NewWindow(8, nil)
	limits := func(steps string) []int { // s = a shed, a = an answered call
		var out []int
		for _, c := range steps {
			w.speculated(c == 's')
			out = append(out, w.Limit())
		}
		return out
	}
	assert.Equal(t, []int{4}, limits("s"), "a shed halves the window")
	assert.Equal(t, []int{4}, limits("s"), "a second shed right after is held off: the calls it hit were under way before the cut")
	assert.Equal(t, []int{4, 4, 4, 5}, limits("aaaa"), "a window's worth answered grows it by one")
	assert.Equal(t, []int{5, 5, 5, 5, 6}, limits("aaaaa"))
	assert.Equal(t, 8, limits("aaaaaaaaaaaaaaaa")[15], "6 answered grow 6 to 7, 7 more to 8")
	assert.Equal(t, []int{4}, limits("s"), "a shed past the hold-off halves again")
	for range 100 {
		w.speculated(false)
	}
	assert.Equal(t, 8, w.Limit(), "growth stops at the maximum")
	for range 200 {
		w.speculated(true)
	}
	assert.Equal(t, 1, w.Limit(), "cuts stop at one call")
}

func TestWindowCutsWhenDemandSlowsAndRecovers(t *testing.T) {
	w := NewWindow(4, nil)
	for range 100 {
		w.demand(1, time.Millisecond)
	}
	require.Equal(t, 4, w.Limit(), "steady demand leaves the window open")
	for range 200 {
		w.demand(1, 5*time.Millisecond)
		w.speculated(false)
	}
	assert.Equal(t, 1, w.Limit(), "demand five times slower than its baseline closes the window to one call")
	for range 200 {
		w.demand(1, time.Millisecond)
		w.speculated(false)
	}
	assert.Equal(t, 4, w.Limit(), "demand back at its baseline lets the window grow back")
}

func TestWindowComparesDemandsOfLikeSize(t *testing.T) {
	w := NewWindow(4, nil)
	for range 500 {
		w.demand(1, time.Millisecond)
		w.demand(256, 20*time.Millisecond) // a full batch always costs more than a single id
	}
	assert.Equal(t, 4, w.Limit(), "large batches are not a slowdown of small ones")
}

func TestWindowBoundsCallsInFlight(t *testing.T) {
	w := NewWindow(2, nil)
	gone, cancel := context.WithCancel(context.Background())
	cancel() // acquire then answers at once: a slot, or the context's error
	require.NoError(t, w.acquire(gone))
	require.NoError(t, w.acquire(gone))
	require.ErrorIs(t, w.acquire(gone), context.Canceled, "a third call beyond a window of two")

	w.speculated(true) // the window is now one, with two in flight
	w.release()
	require.ErrorIs(t, w.acquire(gone), context.Canceled, "one in flight fills a window of one")

	got := make(chan error, 1)
	go func() { got <- w.acquire(context.Background()) }()
	w.release()
	require.NoError(t, <-got, "a waiting call starts when a slot frees")
	w.release()
}

func TestWindowObservesWhatTheOriginSays(t *testing.T) {
	shed := status.Error(codes.ResourceExhausted, "over the limit")
	tooBig := status.Error(codes.ResourceExhausted, "grpc: received message larger than max (9 vs. 4)")
	tests := []struct {
		name string
		rt   origin.RoundTrip
		want int
	}{
		{name: "a shed speculative call cuts", rt: origin.RoundTrip{RPC: "BatchGet", IDs: 3, Speculative: true, Err: shed}, want: 2},
		{name: "a shed Expand cuts", rt: origin.RoundTrip{RPC: "Expand", IDs: 1, Speculative: true, Err: shed}, want: 2},
		{name: "a reply over the receive limit is not a shed", rt: origin.RoundTrip{RPC: "BatchGet", IDs: 3, Speculative: true, Err: tooBig}, want: 4},
		{name: "a demand refused is not a shed", rt: origin.RoundTrip{RPC: "BatchGet", IDs: 3, Err: shed}, want: 4},
		{name: "another failure is not a shed", rt: origin.RoundTrip{RPC: "BatchGet", IDs: 3, Speculative: true, Err: errors.New("x")}, want: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWindow(4, nil)
			w.Observe(tt.rt)
			assert.Equal(t, tt.want, w.Limit())
		})
	}
	t.Run("writes are not demand", func(t *testing.T) {
		w := NewWindow(4, nil)
		for range 100 {
			w.Observe(origin.RoundTrip{RPC: "BatchGet", IDs: 1, Elapsed: time.Millisecond})
			w.Observe(origin.RoundTrip{RPC: "Put", IDs: 1, Elapsed: time.Microsecond})
		}
		assert.Equal(t, 4, w.Limit())
	})
}

func TestWindowGrowsBackWhenDemandStops(t *testing.T) {
	w := NewWindow(4, nil)
	for range 100 {
		w.demand(1, time.Millisecond)
	}
	for range 50 {
		w.demand(1, 10*time.Millisecond) // a burst of slow demand, then none
	}
	require.Equal(t, 1, w.Limit())
	for range 200 {
		w.speculated(false)
	}
	assert.Equal(t, 4, w.Limit(), "answered speculation alone reopens the window")
}

// roundTrips records the round trips a Window reports.
type roundTrips struct {
	nopMetrics
	last time.Duration
}

func (r *roundTrips) RoundTrip(d time.Duration) { r.last = d }

// An application that reads only with BatchGet of several ids misses with
// several: its round trips are what a read not covered waits, and the
// planner plans ahead with them (the metric says so); single-id ones, once
// seen, are the smaller and come first.
func TestWindowRoundTripOfBatchMisses(t *testing.T) {
	m := &roundTrips{}
	w := NewWindow(4, m)
	require.Zero(t, w.RoundTrip(), "nothing observed: nothing planned ahead")
	w.Observe(origin.RoundTrip{RPC: "BatchGet", IDs: 6, Elapsed: 3 * time.Millisecond})
	assert.Equal(t, 3*time.Millisecond, w.RoundTrip(), "a batch miss of six ids")
	assert.Equal(t, 3*time.Millisecond, m.last)
	w.Observe(origin.RoundTrip{RPC: "BatchGet", IDs: 40, Elapsed: 9 * time.Millisecond})
	assert.Equal(t, 3*time.Millisecond, w.RoundTrip(), "the fewest ids asked for at once")
	w.Observe(origin.RoundTrip{RPC: "BatchGet", IDs: 1, Elapsed: time.Millisecond})
	assert.Equal(t, time.Millisecond, w.RoundTrip(), "a single id's round trip once there is one")
	assert.Equal(t, time.Millisecond, m.last)
}
