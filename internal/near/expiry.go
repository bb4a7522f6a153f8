package near

import (
	"time"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// expiring is an object fetched from the origin whose sidecar copy turns
// stale at at (Unix nanos): the fetch's time plus the TTL.
type expiring struct {
	at int64
	id string
}

// expiries are the fetches of the last TTL, oldest first: with one TTL for
// every object, the order they were fetched in is the order they expire in,
// so a queue is enough. Each costs one entry (24 bytes; the id string is
// the fetched object's own) until it expires, or until Config.MaxExpiries
// newer ones push it out early: an early invalidation is only a lost near
// hit, never a stale read. Guarded by the hub's lock.
type expiries struct {
	queue []expiring
	head  int
	timer *time.Timer // armed for the head while the queue is not empty
}

// fetched records that objs were just fetched from the origin: when the TTL
// ends, every subscriber holding one of them is told to drop it. The cache
// stores a fetched copy after this, so its own copy turns stale no earlier.
func (h *Hub) fetched(objs []*graph.Object) {
	if h.cfg.MaxAge <= 0 || len(objs) == 0 {
		return
	}
	at := time.Now().Add(h.cfg.MaxAge).UnixNano()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	for _, o := range objs {
		h.exp.queue = append(h.exp.queue, expiring{at: at, id: o.ID})
	}
	for len(h.exp.queue)-h.exp.head > h.cfg.MaxExpiries {
		h.expireHeadLocked()
	}
	if h.exp.timer == nil {
		h.exp.timer = time.AfterFunc(h.cfg.MaxAge, h.expireDue)
	}
}

// expireDue is the timer's: it expires what is due and re-arms for the rest.
func (h *Hub) expireDue() {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.exp.timer = nil
	if h.closed {
		return
	}
	h.expireLocked(now.UnixNano())
	if h.exp.head < len(h.exp.queue) {
		h.exp.timer = time.AfterFunc(time.Duration(h.exp.queue[h.exp.head].at-now.UnixNano()), h.expireDue)
	}
}

// expireLocked sends, for every fetch whose TTL ended by now, an
// invalidation to each subscriber holding its id, which stops holding it.
// The invalidation has version 0 (drop any copy, no floor): a refetch of
// the same version is as good as ever.
func (h *Hub) expireLocked(now int64) {
	q := &h.exp
	for q.head < len(q.queue) && q.queue[q.head].at <= now {
		h.expireHeadLocked()
	}
	if q.head > len(q.queue)/2 {
		n := copy(q.queue, q.queue[q.head:])
		clear(q.queue[n:])
		q.queue, q.head = q.queue[:n], 0
	}
}

// expireHeadLocked expires the oldest fetch of the queue.
func (h *Hub) expireHeadLocked() {
	q := &h.exp
	id := q.queue[q.head].id
	q.queue[q.head] = expiring{}
	q.head++
	for _, s := range h.subs {
		if _, ok := s.held[id]; !ok {
			continue
		}
		h.unholdLocked(s, id)
		h.m.expired.WithLabelValues(s.label).Inc()
		h.enqueueLocked(s, Event{Kind: KindInvalidation, ID: id})
	}
}

// Close stops the expiry timer; the hub tells no one of expiries after it.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	if h.exp.timer != nil {
		h.exp.timer.Stop()
		h.exp.timer = nil
	}
	h.exp = expiries{}
}
