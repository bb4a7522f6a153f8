package store

import (
	"sync"
	"sync/atomic"
)

// Revisions publishes a store's last committed revision and wakes those
// waiting for it to advance. The zero value is not ready: use NewRevisions.
type Revisions struct {
	rev atomic.Uint64

	mu      sync.Mutex    // protects changed and closed
	changed chan struct{} // closed and replaced whenever the revision advances
	closed  bool
}

// NewRevisions starts at rev.
func NewRevisions(rev uint64) *Revisions {
	r := &Revisions{changed: make(chan struct{})}
	r.rev.Store(rev)
	return r
}

// Load is the last revision published.
func (r *Revisions) Load() uint64 { return r.rev.Load() }

// Changed returns a channel closed when the revision next advances or Close
// is called.
func (r *Revisions) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// Advance publishes rev. Commits may be reported out of order, so the
// revision only moves forward.
func (r *Revisions) Advance(rev uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rev <= r.rev.Load() {
		return
	}
	r.rev.Store(rev)
	if !r.closed {
		close(r.changed)
		r.changed = make(chan struct{})
	}
}

// Close wakes every waiter for good; it reports whether this call closed
// (false when already closed).
func (r *Revisions) Close() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.closed = true
	close(r.changed)
	return true
}

// Closed reports whether Close was called.
func (r *Revisions) Closed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}
