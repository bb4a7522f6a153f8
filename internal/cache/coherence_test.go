package cache

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInvalidateVersion(t *testing.T) {
	tests := []struct {
		name        string
		cached      uint64 // version cached before the change; 0 = nothing cached
		prefetched  bool
		change      uint64
		deleted     bool
		wantDropped bool
	}{
		{name: "older main copy dropped", cached: 1, change: 2, wantDropped: true},
		{name: "older prefetched copy dropped", cached: 1, prefetched: true, change: 2, wantDropped: true},
		{name: "same version kept", cached: 2, change: 2},
		{name: "newer copy kept", cached: 3, change: 2},
		{name: "deleted drops any copy", cached: 3, change: 3, deleted: true, wantDropped: true},
		{name: "nothing cached", change: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			if tt.cached > 0 {
				if tt.prefetched {
					h.AddPrefetched(sized("a", tt.cached, 100))
				} else {
					h.AddDemand(sized("a", tt.cached, 100))
				}
			}
			assert.Equal(t, tt.wantDropped, h.InvalidateVersion("a", tt.change, tt.deleted))
			_, known := h.Peek("a")
			assert.Equal(t, tt.cached > 0 && !tt.wantDropped, known)
		})
	}
}

func TestFloorRefusesLateFills(t *testing.T) {
	h := newHarness(t, Config{})
	// A fetch read version 1, then the origin announced version 2, then the
	// fetch completes: its copy must not be cached, by either path.
	h.InvalidateVersion("a", 2, false)
	h.AddDemand(sized("a", 1, 100))
	h.AddPrefetched(sized("a", 1, 100))
	h.AddMissing("a") // a read from before the object existed
	_, known := h.Peek("a")
	assert.False(t, known, "nothing older than the floor, and no false absence")
	assert.Equal(t, 3.0, val(h.m.StaleFills))

	h.AddDemand(sized("a", 2, 100))
	o, known := h.Peek("a")
	require.True(t, known)
	assert.Equal(t, uint64(2), o.Version, "the announced version is accepted")

	// A deletion floors the deleted version itself; the absence is accepted.
	h.InvalidateVersion("b", 5, true)
	h.AddDemand(sized("b", 5, 100))
	h.AddMissing("b")
	o, known = h.Peek("b")
	assert.True(t, known)
	assert.Nil(t, o, "remembered as missing")

	// Floors are forgotten after FloorTTL.
	h.InvalidateVersion("c", 9, false)
	h.clock.Advance(DefaultFloorTTL + time.Second)
	h.AddDemand(sized("c", 1, 100))
	_, known = h.Peek("c")
	assert.True(t, known)
}

func TestLateOlderChangeKeepsNewerFloor(t *testing.T) {
	h := newHarness(t, Config{})
	h.InvalidateVersion("a", 4, false)
	h.InvalidateVersion("a", 2, false) // delivered out of order
	h.AddDemand(sized("a", 3, 100))
	_, known := h.Peek("a")
	assert.False(t, known)
}

func TestStaleAfterTTL(t *testing.T) {
	h := newHarness(t, Config{TTL: time.Minute, StaleFor: time.Minute})
	h.AddDemand(sized("m", 1, 100))
	h.AddPrefetched(sized("p", 1, 100))

	l, ok := h.Get("m")
	require.True(t, ok)
	assert.False(t, l.Stale)

	h.clock.Advance(90 * time.Second)
	for _, id := range []string{"m", "p"} {
		_, known := h.Peek(id)
		assert.False(t, known, "%s: a stale copy is not followed by planners", id)
		l, ok := h.Get(id)
		require.True(t, ok, id)
		assert.True(t, l.Stale, id)
		assert.Equal(t, 30*time.Second, l.StaleFor, id)
	}

	// A refetch of the same version renews it.
	h.AddDemand(sized("m", 1, 100))
	l, ok = h.Get("m")
	require.True(t, ok)
	assert.False(t, l.Stale, "renewed")

	h.clock.Advance(3 * time.Minute)
	_, ok = h.Get("p")
	assert.False(t, ok, "gone after TTL + StaleFor")
}

func TestClear(t *testing.T) {
	h := newHarness(t, Config{})
	h.AddDemand(sized("m", 1, 100))
	h.AddPrefetched(sized("p", 1, 100))
	h.AddMissing("n")
	h.InvalidateVersion("f", 3, false)
	h.Clear()
	for _, id := range []string{"m", "p", "n"} {
		_, known := h.Peek(id)
		assert.False(t, known, id)
	}
	h.AddDemand(sized("f", 1, 100))
	_, known := h.Peek("f")
	assert.True(t, known, "floors are cleared too")
	assert.Equal(t, 1.0, val(h.m.PrefetchWasted), "the unused prefetched object was wasted")
	h.settle()
	assert.Equal(t, int64(1), h.Stats()["main"].Objects)
}
