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
	// 66 Invalidate calls of 1000 ids do: 67 million events of 64 bytes,
	// 4 GiB of queues). Default 64 MiB.
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
		s.queue = nil // nor does a long queue keep its room (see TakeHeld)
	}
	s.queue = append(s.queue[:0], e)
	s.pending, h.pending = e.bytes(), h.pending+e.bytes()
	h.unholdAllLocked(s)
	s.signal()
}

// Heartbeat counts a heartbeat sent to s.
func (h *Hub) Heartbeat(s *Subscriber) {
	h.m.events.WithLabelValues(s.label, KindHeartbeat.String()).Inc()
}
