package near

import "fmt"

// A subscriber's queue: what is queued for it, what it takes, and the
// bounds on both (Config.QueueEvents, QueueBytes and InvalidationBytes).

// queueRoom is the room for events a subscriber's queue may keep however
// little it holds (see TakeHeld).
const queueRoom = 512

// unqueueLocked forgets the events queued for s, which its queue is about
// to drop.
func (h *Hub) unqueueLocked(s *Subscriber) {
	h.queued -= s.queued
	s.queued = 0
	h.pending -= s.pending
	s.pending = 0
	h.m.queued.Set(float64(h.queued))
}

// eventBytes is what an event takes in a queue besides its strings (a
// push's object is counted by its Size instead).
const eventBytes = 64

// bytes is what e counts against InvalidationBytes: for an event other
// than a push, itself and its strings (shared, but each event keeps them).
func (e Event) bytes() int64 { return eventBytes + int64(len(e.ID)+len(e.Reason)) }

// enqueueLocked queues e for s, or disconnects s when its queue is full.
// An event other than a push that would make the hub's queues pass
// InvalidationBytes first disconnects the subscribers furthest behind
// until it fits (s, when it is one of them).
func (h *Hub) enqueueLocked(s *Subscriber, e Event) {
	if s.closed {
		return
	}
	if len(s.queue) >= h.cfg.QueueEvents {
		h.disconnectLocked(s, fmt.Sprintf("subscriber fell behind: %d events queued", len(s.queue)))
		return
	}
	if e.Kind != KindPush {
		n := e.bytes()
		for h.pending+n > h.cfg.InvalidationBytes {
			v := h.furthestBehindLocked()
			if v == nil {
				break // no open subscriber holds any: what is left is not written yet, or e alone is larger than the limit
			}
			h.disconnectLocked(v, fmt.Sprintf("subscriber fell behind: %d bytes of invalidations queued or not yet written, the most of any subscriber, when all of them held the limit of %d",
				v.behind(), h.cfg.InvalidationBytes))
			if v == s {
				return
			}
		}
		s.pending += n
		h.pending += n
	}
	s.queue = append(s.queue, e)
	s.signal()
}

// disconnectLocked ends s, which fell behind, for reason.
func (h *Hub) disconnectLocked(s *Subscriber, reason string) {
	s.closed = true
	s.reason = reason
	h.unqueueLocked(s)
	s.queue = nil
	close(s.gone)
	h.m.disconnects.WithLabelValues(s.label, "behind").Inc()
}

// furthestBehindLocked is the open subscriber with the most bytes of
// events other than pushes queued or not yet released (behind); nil when
// none has any.
func (h *Hub) furthestBehindLocked() *Subscriber {
	var far *Subscriber
	for _, s := range h.subs {
		if !s.closed && s.behind() > 0 && (far == nil || s.behind() > far.behind()) {
			far = s
		}
	}
	return far
}

// behind is the bytes of events other than pushes s holds: queued, or
// taken and not released yet. Called with the hub's lock.
func (s *Subscriber) behind() int64 { return s.pending + s.takenOther }

// TakeHeld removes and returns up to max queued events of s (nil when
// none), which count against the subscriber's budget, QueueBytes and
// InvalidationBytes as queued events do until release is called: when
// the events are no longer in memory (the message carrying them was
// written to the connection). A message taken from the queue and waiting
// for a client that does not read costs what a queued one does. release
// may be called more than once, also after Unsubscribe.
func (h *Hub) TakeHeld(s *Subscriber, max int) (events []Event, release func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := min(max, len(s.queue))
	if n == 0 {
		return nil, func() {}
	}
	out := make([]Event, n)
	copy(out, s.queue)
	var kinds [KindHeartbeat + 1]int // counted per kind, not per event: a label lookup each is dear
	var pushes, other int64
	for _, e := range out {
		kinds[e.Kind]++
		if e.Kind == KindPush {
			pushes += e.Object.Size()
		} else {
			other += e.bytes()
		}
	}
	s.queued -= pushes
	s.takenPushes += pushes
	s.pending -= other
	s.takenOther += other
	for k, c := range kinds {
		if c > 0 {
			h.m.events.WithLabelValues(s.label, Kind(k).String()).Add(float64(c))
		}
	}
	rest := copy(s.queue, s.queue[n:])
	clear(s.queue[rest:])
	s.queue = s.queue[:rest]
	if c := cap(s.queue); c > queueRoom && rest <= c/4 {
		// A queue that was long keeps no room for it once read: else each
		// subscriber in turn could be made to keep QueueEvents' worth.
		s.queue = append([]Event(nil), s.queue...)
	}
	if rest > 0 {
		s.signal()
	}
	released := false
	return out, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if released {
			return
		}
		released = true
		s.takenPushes -= pushes
		h.queued -= pushes
		s.takenOther -= other
		h.pending -= other
		h.m.queued.Set(float64(h.queued))
	}
}
