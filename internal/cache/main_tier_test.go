package cache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A demanded copy older than the main tier's is refused within its Set (no
// Get before it): the tier keeps its copy, counts no rejection, and its
// policy keeps charging the kept copy's cost, so the budget still holds.
func TestRefusedCopyLeavesTheMainTierAsItWas(t *testing.T) {
	const budget = 8 << 10
	h := newHarness(t, Config{MainBytes: budget})
	newer, older := sized("x", 2, 4<<10), sized("x", 1, 100)
	h.AddDemand(newer)
	h.AddDemand(older)
	h.settle()
	l, ok := h.Get("x")
	require.True(t, ok)
	assert.Same(t, newer, l.Object)
	assert.Equal(t, stats(newer.Size(), 1, 0, 0), h.Stats())
	assert.Equal(t, h.Stats()["main"], h.mainContents())
	assert.Zero(t, val(h.m.SetsRejected), "a refused copy is not an admission rejection")

	// Had the policy taken the refused copy's 100 bytes for x, it would
	// admit 4 KiB more than the budget here.
	for i := range 16 {
		h.AddDemand(sized(string(rune('a'+i)), 1, 512))
	}
	h.settle()
	assert.LessOrEqual(t, h.Stats()["main"].Bytes, int64(budget))
	assert.Equal(t, h.Stats()["main"], h.mainContents())
}
