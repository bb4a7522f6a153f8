// Package bufpool is the buffer pool the sidecar's and the origin's gRPC
// servers and clients take their message buffers from.
//
// grpc-go's pools clear every buffer they hand out, the whole capacity of
// its tier: a 40 KiB message read into the 1 MiB tier clears 1 MiB first.
// Every buffer gRPC takes is written before it is read: a frame read into
// it, a message copied into it or marshalled into it, each slice cut to the
// bytes written (grpc-go #8790 asks for such a pool; grpc-go keeps its own
// uncleared pool internal). On W1's cold walk the clearing was 5% of the
// CPU of origin, sidecar and client together (BenchmarkColdWalk's profile).
// This pool does not clear: a buffer comes back with what its last user
// wrote. Nothing of ours reads a pooled buffer, only gRPC does.
package bufpool

import (
	"math/bits"
	"sync"

	"google.golang.org/grpc/mem"
)

const (
	minShift = 8  // 256 B, the smallest tier; gRPC pools nothing under 1 KiB
	maxShift = 26 // 64 MiB, the default largest message; larger buffers are not pooled
)

// Pool is a mem.BufferPool of power-of-two tiers, 256 B to 64 MiB, that
// hands out buffers without clearing them. The zero value is ready.
type Pool struct {
	tiers [maxShift - minShift + 1]sync.Pool
}

var _ mem.BufferPool = (*Pool)(nil)

// Get returns a buffer of length bytes whose content is undefined, from the
// smallest tier that holds it.
func (p *Pool) Get(length int) *[]byte {
	shift := max(bits.Len(uint(max(length, 1)-1)), minShift)
	if shift > maxShift {
		b := make([]byte, length)
		return &b
	}
	if b, ok := p.tiers[shift-minShift].Get().(*[]byte); ok {
		*b = (*b)[:length]
		return b
	}
	b := make([]byte, length, 1<<shift)
	return &b
}

// Put returns a buffer Get handed out (or a prefix of it) to its tier; one
// of any other capacity is left to the garbage collector.
func (p *Pool) Put(b *[]byte) {
	c := cap(*b)
	if c < 1<<minShift || c > 1<<maxShift || c&(c-1) != 0 {
		return
	}
	p.tiers[bits.Len(uint(c))-1-minShift].Put(b)
}
