// Package near keeps application near caches coherent: it tracks what each
// subscriber holds and queues, per subscriber and in order, invalidations
// and predicted objects for it.
package near

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config tunes the hub. Zero values take the defaults.
type Config struct {
	// QueueEvents bounds each subscriber's queue; a subscriber whose queue
	// is full when an invalidation must be queued is disconnected. Pushes
	// are only queued while the queue is less than three quarters full.
	// Default 65536.
	QueueEvents int
	// MaxHeld bounds the ids tracked per subscriber; past it the subscriber
	// is sent a flush and tracking starts over. Default 262144.
	MaxHeld int
	// Floors is how many recent changes the hub remembers to refuse pushing
	// a copy older than one it already announced. Default 65536.
	Floors int
	// Heartbeat is the longest a subscriber goes without an event; default 1s.
	Heartbeat time.Duration
	// MaxExpiries bounds the fetches remembered until their TTL ends; past
	// it the oldest is expired early. Default 1048576 (24 MiB).
	MaxExpiries int
	// MaxSubscribers bounds the subscribers registered at once: every
	// prediction, change and read of a subscriber visits them all under
	// the hub's lock, and each costs its stream and its heartbeats. Default
	// 1024.
	MaxSubscribers int
	// HeldBytes bounds the ids all subscribers are tracked for, each
	// counted as its length plus heldOverhead: past it, a subscriber that
	// reads one more is sent a flush and tracking starts over for it, so
	// that clients reading many or long ids (a read tracks its ids before it
	// is answered, whether they exist or not) cannot grow the hub without
	// end. Default 256 MiB.
	HeldBytes int64
	// QueueBytes bounds the bytes of pushed objects queued for all
	// subscribers together, not yet written to their connections (queued,
	// or taken and not released: TakeHeld); past it predictions are not
	// pushed (counted as dropped). Each subscriber's queued pushes also
	// stay within its own budget. A subscriber that does not read so holds
	// at most its budget of objects the cache may have let go of, and all of
	// them together at most QueueBytes. Default 64 MiB.
	QueueBytes int64
	// InvalidationBytes bounds the invalidations and flushes queued for all
	// subscribers together, not yet written to their connections (queued,
	// or taken and not released: TakeHeld), each counted as eventBytes plus
	// its id and reason: one that would pass it disconnects the subscriber
	// with the most of them queued, as one whose queue is full. An
	// invalidation cannot be dropped, and QueueEvents bounds one
	// subscriber's queue only: subscribers that never read would otherwise
	// keep QueueEvents invalidations each, MaxSubscribers times over (a
	// one-byte id held by 1024 of them and invalidated 65,535 times, which
	// 66 Invalidate calls of 1000 ids do: 4.4 GiB). Default 64 MiB.
	InvalidationBytes int64
	// MaxAge is the sidecar's TTL, 0 = none: the TTL after each origin
	// fetch, the subscribers holding the fetched id are told to drop it,
	// and subscribers are told to keep no copy longer than it.
	MaxAge time.Duration
}

func (c *Config) setDefaults() {
	if c.QueueEvents == 0 {
		c.QueueEvents = 65536
	}
	if c.MaxHeld == 0 {
		c.MaxHeld = 262144
	}
	if c.Floors == 0 {
		c.Floors = 65536
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = time.Second
	}
	if c.MaxExpiries == 0 {
		c.MaxExpiries = 1 << 20
	}
	if c.QueueBytes == 0 {
		c.QueueBytes = 64 << 20
	}
	if c.InvalidationBytes == 0 {
		c.InvalidationBytes = 64 << 20
	}
	if c.MaxSubscribers == 0 {
		c.MaxSubscribers = 1024
	}
	if c.HeldBytes == 0 {
		c.HeldBytes = 256 << 20
	}
}

func (c Config) validate() error {
	var errs []error
	for _, v := range []struct {
		name string
		n    int
	}{{"queue events", c.QueueEvents}, {"max held", c.MaxHeld}, {"floors", c.Floors}, {"max expiries", c.MaxExpiries},
		{"max subscribers", c.MaxSubscribers}} {
		if v.n < 1 {
			errs = append(errs, fmt.Errorf("near %s %d: must be at least 1", v.name, v.n))
		}
	}
	if c.Heartbeat <= 0 {
		errs = append(errs, fmt.Errorf("near heartbeat %v: must be positive", c.Heartbeat))
	}
	if c.QueueBytes < 0 || c.HeldBytes < 0 || c.InvalidationBytes < 0 {
		errs = append(errs, fmt.Errorf("near queue bytes %d, held bytes %d and invalidation bytes %d: must not be negative",
			c.QueueBytes, c.HeldBytes, c.InvalidationBytes))
	}
	if c.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("near max age %v: must not be negative", c.MaxAge))
	}
	return errors.Join(errs...)
}

// Hub owns the subscribers. Its methods are safe for concurrent use and
// never block on a subscriber.
type Hub struct {
	cfg Config
	m   *hubMetrics

	mu     sync.Mutex // guards everything below and every subscriber's state
	subs   map[string]*Subscriber
	floors *floors
	exp    expiries
	// queued is the bytes of the pushes in every subscriber's queue, and
	// of those taken and not released yet (TakeHeld), Unsubscribe or not.
	queued int64
	// pending is the bytes of the other events in every subscriber's
	// queue, as Event.bytes counts them (InvalidationBytes), and of those
	// taken and not released yet.
	pending int64
	held    int64 // bytes of the ids every subscriber is tracked for (HeldBytes)
	closed  bool
	next    atomic.Uint64
	// pushing counts the registered subscribers with a budget: without
	// one, a prediction is dropped before the lock.
	pushing atomic.Int32
}

// New makes a hub, registering its metrics on reg. Close must follow.
func New(cfg Config, reg prometheus.Registerer) (*Hub, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Hub{cfg: cfg, m: newHubMetrics(reg), subs: map[string]*Subscriber{}, floors: newFloors(cfg.Floors)}, nil
}

// Config returns the hub's settings, defaults filled in.
func (h *Hub) Config() Config { return h.cfg }

// Subscribe registers a subscriber with a near-cache budget of budget bytes
// (0: invalidations only), or returns nil when MaxSubscribers are
// registered. Unsubscribe must follow.
func (h *Hub) Subscribe(budget int64, name string) *Subscriber {
	s := &Subscriber{
		ID:     strconv.FormatUint(h.next.Add(1), 36) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		budget: budget,
		label:  h.m.label(name),
		held:   map[string]struct{}{},
		wake:   make(chan struct{}, 1),
		gone:   make(chan struct{}),
	}
	h.mu.Lock()
	full := len(h.subs) >= h.cfg.MaxSubscribers
	if !full {
		h.subs[s.ID] = s
		if budget > 0 {
			h.pushing.Add(1)
		}
	}
	h.mu.Unlock()
	if full {
		return nil
	}
	h.m.subscribers.Inc()
	return s
}

// Unsubscribe forgets s; it is safe to call more than once.
func (h *Hub) Unsubscribe(s *Subscriber) {
	h.mu.Lock()
	_, ok := h.subs[s.ID]
	if ok && s.budget > 0 {
		h.pushing.Add(-1)
	}
	delete(h.subs, s.ID)
	h.unqueueLocked(s)
	s.queue = nil
	h.unholdAllLocked(s)
	h.mu.Unlock()
	if ok {
		h.m.subscribers.Dec()
	}
}

// Track records that subscriber id is about to read ids through the
// sidecar: from now on it is sent every change to them. It must be called
// before the read, so that no change between the read and the tracking is
// missed. An unknown subscriber is ignored.
func (h *Hub) Track(subscriber string, ids []string) {
	if subscriber == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.subs[subscriber]
	if s == nil {
		return
	}
	for _, id := range ids {
		h.holdLocked(s, id)
	}
}

// queueRoom is the room for events a subscriber's queue may keep however
// little it holds (see Take).
const queueRoom = 512

// heldOverhead approximates what tracking an id costs beyond its bytes: a
// map entry, its string header and hash.
const heldOverhead = 48

// holdLocked marks id held by s; past MaxHeld, or HeldBytes for all
// subscribers, s is flushed and tracking starts over with id.
func (h *Hub) holdLocked(s *Subscriber, id string) {
	if _, ok := s.held[id]; ok {
		return
	}
	n := int64(len(id)) + heldOverhead
	if len(s.held) >= h.cfg.MaxHeld || h.held+n > h.cfg.HeldBytes {
		h.flushLocked(s, "tracking limit")
	}
	s.held[id] = struct{}{}
	s.heldBytes += n
	h.held += n
	h.m.held.Set(float64(h.held))
}

// unholdLocked forgets that s holds id, which it does.
func (h *Hub) unholdLocked(s *Subscriber, id string) {
	delete(s.held, id)
	n := int64(len(id)) + heldOverhead
	s.heldBytes -= n
	h.held -= n
	h.m.held.Set(float64(h.held))
}

// unholdAllLocked forgets every id s holds.
func (h *Hub) unholdAllLocked(s *Subscriber) {
	s.held = map[string]struct{}{}
	h.held -= s.heldBytes
	s.heldBytes = 0
	h.m.held.Set(float64(h.held))
}

// Changed announces a write-side event: id now has version (or was deleted
// at version). Every subscriber holding id is sent an invalidation, in
// order with everything queued for it before. version 0 means unknown: the
// subscribers drop their copies without a floor.
func (h *Hub) Changed(id string, version uint64, deleted bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if version > 0 {
		h.floors.raise(id, version, deleted)
	}
	for _, s := range h.subs {
		if _, ok := s.held[id]; !ok {
			continue
		}
		h.enqueueLocked(s, Event{Kind: KindInvalidation, ID: id, Version: version, Deleted: deleted})
	}
}

// Dropped announces that cached copies of ids were dropped without a
// change (an Invalidate call): subscribers drop theirs.
func (h *Hub) Dropped(ids ...string) {
	for _, id := range ids {
		h.Changed(id, 0, false)
	}
}

// Flush tells every subscriber to drop everything it holds: the sidecar's
// cache was cleared or the origin changed identity. Queued events are
// superseded by it.
func (h *Hub) Flush(reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.subs {
		h.flushLocked(s, reason)
	}
}

func (h *Hub) flushLocked(s *Subscriber, reason string) {
	if s.closed {
		return
	}
	h.unqueueLocked(s)
	e := Event{Kind: KindFlush, Reason: reason}
	clear(s.queue) // the objects of pushes superseded go with them
	if cap(s.queue) > queueRoom {
		s.queue = nil // nor does a long queue keep its room (see Take)
	}
	s.queue = append(s.queue[:0], e)
	s.pending, h.pending = e.bytes(), h.pending+e.bytes()
	h.unholdAllLocked(s)
	s.signal()
}

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

// Take removes and returns up to max queued events of s (nil when none),
// no longer counted: TakeHeld released at once.
func (h *Hub) Take(s *Subscriber, max int) []Event {
	evs, release := h.TakeHeld(s, max)
	release()
	return evs
}

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

// Heartbeat counts a heartbeat sent to s.
func (h *Hub) Heartbeat(s *Subscriber) {
	h.m.events.WithLabelValues(s.label, KindHeartbeat.String()).Inc()
}
