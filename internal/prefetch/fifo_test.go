package prefetch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFifoKeepsOrderAcrossWrapAndGrowth pushes and pops so that the ring
// wraps around its end before it grows: the entries come out in the order
// they went in, and a popped slot keeps nothing alive.
func TestFifoKeepsOrderAcrossWrapAndGrowth(t *testing.T) {
	var q fifo[*int]
	next, want := 0, 0
	push := func(n int) {
		for range n {
			v := next
			q.push(&v)
			next++
		}
	}
	pop := func(n int) {
		for range n {
			require.Equal(t, want, **q.front(), "front")
			at := q.head
			require.Equal(t, want, *q.pop(), "pop")
			require.Nil(t, q.buf[at], "a popped slot is cleared")
			want++
		}
	}
	push(50)
	pop(40)  // head at 40 of 64
	push(50) // wraps: 60 entries, 24 of them at the front of the buffer
	require.Equal(t, 60, q.len())
	require.Len(t, q.buf, 64, "no growth while there is room")
	push(100) // grows from a wrapped ring
	require.Equal(t, 160, q.len())
	pop(160)
	require.Zero(t, q.len())
	push(3)
	pop(3)
}
