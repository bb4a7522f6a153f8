package bufpool

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGetReturnsTheLengthAskedForFromTheSmallestTier(t *testing.T) {
	var p Pool
	for _, tt := range []struct{ length, cap int }{
		{0, 256}, {1, 256}, {256, 256}, {257, 512}, {40 << 10, 64 << 10}, {1 << 20, 1 << 20}, {64 << 20, 64 << 20},
	} {
		b := p.Get(tt.length)
		assert.Len(t, *b, tt.length)
		assert.Equal(t, tt.cap, cap(*b), "length %d", tt.length)
	}
	b := p.Get(64<<20 + 1)
	assert.Len(t, *b, 64<<20+1, "beyond the largest tier: allocated, not pooled")
}

func TestPutKeepsOnlyBuffersOfATier(t *testing.T) {
	var p Pool
	b := p.Get(1000)
	(*b)[0] = 7
	*b = (*b)[:10] // a prefix comes back
	p.Put(b)
	odd := make([]byte, 1000)
	p.Put(&odd) // not a tier's capacity: dropped
	got := p.Get(600)
	assert.Len(t, *got, 600)
	assert.Equal(t, 1024, cap(*got))
	// sync.Pool may drop what it holds at any time; when it kept the buffer,
	// it comes back as it was, not cleared.
	if got == b {
		assert.Equal(t, byte(7), (*got)[0])
	}
}
