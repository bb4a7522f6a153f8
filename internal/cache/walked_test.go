package cache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/metrics"
)

func TestWalkedObjectsWaitInThePrefetchTierAsDemanded(t *testing.T) {
	h := newHarness(t, Config{PrefetchBytes: 500})
	a, b := sized("a", 1, 200), sized("b", 1, 200)
	h.FillWalked(Unchecked, a, b)
	assert.Equal(t, stats(0, 0, 400, 2), h.Stats(), "no main-tier Set for a walk")
	assert.Equal(t, TierPrefetch, h.tierOf("a"))
	objects, _ := h.Unread()
	assert.Zero(t, objects, "demanded, not speculation waiting to be read")

	l, ok := h.Get("a")
	require.True(t, ok)
	assert.Same(t, a, l.Object)
	assert.Equal(t, TierMain, l.Tier, "a demanded object's hit is a main-tier hit")
	assert.Equal(t, 1.0, h.hits(metrics.TierMain))
	assert.Zero(t, h.hits(metrics.TierPrefetch))
	assert.Zero(t, val(h.m.PrefetchUsed), "no speculation paid off")
	h.settle()
	assert.Equal(t, TierMain, h.tierOf("a"), "read again: moved to the main tier")

	h.AddPrefetched(sized("x", 1, 200), sized("y", 1, 200)) // evicts b, the oldest
	assert.Equal(t, Tier(0), h.tierOf("b"))
	assert.Equal(t, 1.0, h.evictions(metrics.TierPrefetch))
	assert.Zero(t, val(h.m.PrefetchWasted), "a demanded object's eviction is not wasted speculation")
}

func TestWalkedObjectsKeepTheVersionRule(t *testing.T) {
	h := newHarness(t, Config{})
	h.AddDemand(sized("new", 5, 200), sized("old", 1, 200))
	h.FillWalked(Unchecked, sized("new", 4, 200), sized("old", 2, 200))
	h.settle()
	assert.Equal(t, TierMain, h.tierOf("new"), "the main tier's newer copy stays")
	assert.Equal(t, TierPrefetch, h.tierOf("old"), "an older main-tier copy is dropped")
	l, _ := h.Get("new")
	assert.Equal(t, uint64(5), l.Object.Version)
	l, _ = h.Get("old")
	assert.Equal(t, uint64(2), l.Object.Version)

	h.FillWalked(Unchecked, sized("w", 3, 200))
	h.FillWalked(Unchecked, sized("w", 2, 200))
	l, _ = h.Get("w")
	assert.Equal(t, uint64(3), l.Object.Version, "an older walked copy never replaces a newer one")
}

func TestWalkedObjectLargerThanThePrefetchTierGoesToTheMainTier(t *testing.T) {
	h := newHarness(t, Config{PrefetchBytes: 100})
	h.FillWalked(Unchecked, sized("big", 1, 200))
	assert.Equal(t, TierMain, h.tierOf("big"))
}

func TestWalkedBatchKeepsTheNewestCopyOfAnID(t *testing.T) {
	h := newHarness(t, Config{PrefetchBytes: 1000})
	h.FillWalked(Unchecked, sized("w", 1, 200), sized("w", 3, 200), nil, sized("w", 2, 200))
	l, ok := h.Get("w")
	require.True(t, ok)
	assert.Equal(t, uint64(3), l.Object.Version)
	assert.Zero(t, val(h.m.PrefetchWasted))

	// Larger than the prefetch tier: main-tier Sets, which ristretto would
	// apply first come first kept while they wait in its buffer.
	h.FillWalked(Unchecked, sized("big", 1, 2000), sized("big", 2, 2000))
	l, ok = h.Get("big")
	require.True(t, ok)
	assert.Equal(t, uint64(2), l.Object.Version)
}
