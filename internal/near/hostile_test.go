package near

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// TestInvalidationsForSubscribersThatDoNotReadAreBounded: eight
// subscribers that never read hold the same hundred ids of 1000 bytes,
// which are invalidated 200 times each (what 20 Invalidate calls of 1000
// ids make); a ninth holds them too and reads as it goes. What all the
// queues keep of invalidations stays within the hub's 64 MiB, where each
// of the eight kept its 20,000 (170 MB in all as counted here; a one-byte
// id held by 1024 subscribers and invalidated 65,535 times, 67 million
// events of 64 bytes, 4 GiB of queues): the subscribers furthest behind
// are disconnected, as subscribers that fell behind, and the one that
// reads is sent every invalidation.
func TestInvalidationsForSubscribersThatDoNotReadAreBounded(t *testing.T) {
	const limit = 64 << 20 // the default Config.InvalidationBytes
	h := newHub(t, Config{})
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = fmt.Sprintf("%04d%s", i, strings.Repeat("x", 996))
	}
	idle := make([]*Subscriber, 8)
	for i := range idle {
		idle[i] = h.Subscribe(0, "idle")
		defer h.Unsubscribe(idle[i])
		h.Track(idle[i].ID, ids)
	}
	reader := h.Subscribe(0, "reader")
	defer h.Unsubscribe(reader)
	h.Track(reader.ID, ids)
	read := 0
	for v := range 200 {
		for _, id := range ids {
			h.Changed(id, uint64(v+1), false)
		}
		read += len(h.Take(reader, 1000))
		require.LessOrEqual(t, queuedInvalidationBytes(h), int64(limit), "after %d invalidations of each id", v+1)
	}
	assert.Equal(t, 200*len(ids), read, "the reader is sent every invalidation")
	select {
	case <-reader.Gone():
		t.Fatalf("the reader was disconnected: %s", reader.Reason())
	default:
	}
	gone := 0
	for _, s := range idle {
		select {
		case <-s.Gone():
			gone++
			assert.Contains(t, s.Reason(), "fell behind")
		default:
		}
	}
	assert.Positive(t, gone, "the subscribers furthest behind are disconnected")
	assert.Equal(t, float64(gone), testutil.ToFloat64(h.m.disconnects.WithLabelValues("idle", "behind")))
}

// queuedInvalidationBytes is what the queues of h keep of events other
// than pushes: each event and its strings.
func queuedInvalidationBytes(h *Hub) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var n int64
	for _, s := range h.subs {
		for _, e := range s.queue {
			if e.Kind != KindPush {
				n += int64(unsafe.Sizeof(e)) + int64(len(e.ID)+len(e.Reason))
			}
		}
	}
	return n
}

// TestADrainedQueueGivesItsRoomBack: a subscriber that let 60,000
// invalidations queue up and then read them keeps room for at most a
// message's worth of events, not for the 60,000 (4.5 MB of room, kept
// for as long as the subscriber stays: a subscriber after another
// could have each kept that much).
func TestADrainedQueueGivesItsRoomBack(t *testing.T) {
	h := newHub(t, Config{})
	s := h.Subscribe(0, "s")
	defer h.Unsubscribe(s)
	h.Track(s.ID, []string{"x"})
	for range 60000 {
		h.Changed("x", 0, false)
	}
	for len(h.Take(s, 512)) > 0 {
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	assert.LessOrEqual(t, cap(s.queue), 512)
}

// TestTakenEventsCountUntilReleased: events taken from a queue
// (TakeHeld) and not yet released, a message gRPC has not written to a
// client that does not read, still count: taken pushes against the
// subscriber's budget and QueueBytes, taken invalidations against
// InvalidationBytes, so that the subscriber holding them is the one
// disconnected when more would pass it. Released, they make room again,
// also once the subscriber has gone.
func TestTakenEventsCountUntilReleased(t *testing.T) {
	size := obj("a", 1).Size()
	id := strings.Repeat("i", 936) // an invalidation of it counts 1000 bytes
	h := newHub(t, Config{QueueBytes: 3 * size, InvalidationBytes: 3500})
	s := h.Subscribe(2*size, "idle")
	defer h.Unsubscribe(s)
	reader := h.Subscribe(0, "reader")
	defer h.Unsubscribe(reader)
	h.Track(s.ID, []string{id})
	h.Track(reader.ID, []string{id})

	h.predicted(nil, []*graph.Object{obj("a", 1), obj("b", 1)}, "fetch")
	evs, release := h.TakeHeld(s, 10)
	require.Equal(t, []string{"push a v1", "push b v1"}, kinds(evs))
	assert.Equal(t, float64(2*size), testutil.ToFloat64(h.m.queued), "taken, not released: still counted")
	h.predicted(nil, []*graph.Object{obj("c", 1)}, "fetch")
	assert.Equal(t, 1.0, testutil.ToFloat64(h.m.pushDropped.WithLabelValues("idle")), "c: over the budget the taken pushes hold")
	release()
	release() // once only
	assert.Zero(t, testutil.ToFloat64(h.m.queued), "released: room again")
	h.predicted(nil, []*graph.Object{obj("c", 1)}, "fetch")
	evs, release = h.TakeHeld(s, 10)
	assert.Equal(t, []string{"push c v1"}, kinds(evs))

	var releases []func()
	for v := range uint64(2) {
		h.Changed(id, v+1, false)
		taken, release := h.TakeHeld(s, 10) // a message each, neither written
		require.Len(t, taken, 1)
		releases = append(releases, release)
		require.Len(t, h.Take(reader, 10), 1)
	}
	h.Changed(id, 3, false) // 2000 bytes taken, 1000 queued, 1000 more for the reader: over 3500
	select {
	case <-s.Gone():
		assert.Contains(t, s.Reason(), "fell behind: 3000 bytes of invalidations queued or not yet written")
	default:
		t.Fatal("the subscriber whose taken invalidations are not written was not disconnected")
	}
	assert.Equal(t, []string{"invalidation " + id + " v3"}, kinds(h.Take(reader, 10)), "the reader is sent its invalidation")
	h.Unsubscribe(s)
	for _, r := range append(releases, release) {
		r()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	assert.Zero(t, h.pending, "released after the subscriber went: nothing left counted")
	assert.Zero(t, h.queued)
}
