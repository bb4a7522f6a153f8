package lookahead

import (
	"container/list"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// WithNearCache keeps up to bytes of objects in the client's process,
// kept coherent by the sidecar (see the package documentation). 0 (the
// default) disables it.
func WithNearCache(bytes int64) Option {
	return func(o *options) { o.nearBytes = bytes }
}

// WithClientName names the client in the sidecar's near-cache metrics.
func WithClientName(name string) Option {
	return func(o *options) { o.name = name }
}

// usedQueue bounds the first reads of pushed objects waiting to be reported.
const usedQueue = 4096

// entryOverhead approximates what an entry costs beyond its object's
// encoded size: map slot, list element, entry fields.
const entryOverhead = 160

// store is the near cache's memory: objects and tombstones by id, bounded
// by bytes, evicted second-chance (FIFO order, a hit buys one more round).
// It is pure: the subscription feeds it, the client reads it.
type store struct {
	budget int64

	mu      sync.RWMutex
	entries map[string]*entry
	order   *list.List // of *entry, oldest first
	bytes   int64
	// gen changes whenever the store is emptied or its tombstones may have
	// been lost: a fill read before the change is refused.
	gen  uint64
	live bool   // a subscription confirmed by its hello is up
	sub  string // its subscriber id

	// lastHeard is when the subscription last sent anything (Unix nanos);
	// lease is how long silence is tolerated and maxAge how long a copy is
	// kept (0 = no limit).
	lastHeard atomic.Int64
	lease     atomic.Int64
	maxAge    atomic.Int64

	stats nearStats

	// used receives the ids of pushed objects on their first read, for the
	// sidecar to hear of (see nearCache.report); full = not reported.
	used chan string
}

// entry is an object or, with obj nil, a tombstone: the floor below which
// copies of id are stale.
type entry struct {
	id      string
	obj     *lookaheadv1.Object
	version uint64
	deleted bool
	pending bool // tombstone of a write whose version is not known yet: refuse every fill
	size    int64
	arrived int64 // Unix nanos
	pushed  bool
	ref     atomic.Bool // hit since the last eviction pass
	used    atomic.Bool // a pushed object that was read
	el      *list.Element
}

type nearStats struct {
	hits, misses, pushes, pushesUsed, invalidations, flushes atomic.Uint64
}

func newStore(budget int64) *store {
	return &store{budget: budget, entries: map[string]*entry{}, order: list.New(), used: make(chan string, usedQueue)}
}

// get returns id's object when it is held, the subscription is up and has
// been heard from within its lease, and the copy is younger than maxAge.
func (s *store) get(id string) *lookaheadv1.Object {
	s.mu.RLock()
	e, live := s.entries[id], s.live
	s.mu.RUnlock()
	if e == nil || e.obj == nil || !live {
		s.stats.misses.Add(1)
		return nil
	}
	now := time.Now().UnixNano()
	if now-s.lastHeard.Load() > s.lease.Load() {
		s.stats.misses.Add(1)
		return nil
	}
	if a := s.maxAge.Load(); a > 0 && now-e.arrived > a {
		s.stats.misses.Add(1)
		return nil
	}
	e.ref.Store(true)
	if e.pushed && !e.used.Swap(true) {
		s.stats.pushesUsed.Add(1)
		select {
		case s.used <- id:
		default:
		}
	}
	s.stats.hits.Add(1)
	return e.obj
}

// ticket is taken before a read through the sidecar: a fill is accepted
// only if nothing was lost in between and the read was tracked.
type ticket struct {
	gen        uint64
	subscriber string
}

// fill stores o, read through the sidecar with ticket t, unless the store
// was emptied since, or o is older than what the store knows of its id.
func (s *store) fill(o *lookaheadv1.Object, t ticket, pushed bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.live || s.gen != t.gen || o == nil {
		return false
	}
	return s.putLocked(o, pushed)
}

func (s *store) putLocked(o *lookaheadv1.Object, pushed bool) bool {
	id := o.GetId()
	if old := s.entries[id]; old != nil {
		switch {
		case old.obj == nil && (old.pending || o.GetVersion() < old.version || (old.deleted && o.GetVersion() <= old.version)):
			return false // below the floor
		case old.obj != nil && old.version >= o.GetVersion():
			return false // as new already
		}
		s.removeLocked(old)
	}
	size := int64(proto.Size(o)) + int64(len(id)) + entryOverhead
	if size > s.budget {
		return false
	}
	e := &entry{id: id, obj: o, version: o.GetVersion(), size: size, arrived: time.Now().UnixNano(), pushed: pushed}
	s.insertLocked(e)
	return true
}

// floor applies an invalidation: copies of id older than version (all of
// them when deleted) go, and a tombstone refuses them later. version 0
// drops any copy without a floor (an Invalidate, the sidecar's copy
// reaching its TTL), and, with no version to refuse by, every read in
// flight: it may bring the dropped copy back. pending marks a write of
// ours whose version the stream will tell.
func (s *store) floor(id string, version uint64, deleted, pending bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.entries[id]
	if version == 0 && !pending {
		if old != nil && old.obj != nil {
			s.removeLocked(old)
			s.stats.invalidations.Add(1)
		}
		s.gen++
		return
	}
	if old != nil {
		if old.obj != nil {
			if !deleted && !pending && old.version >= version {
				return // the copy is that version or newer
			}
			s.stats.invalidations.Add(1)
		} else if !pending && version < old.version {
			return // an older floor than the one held
		}
		s.removeLocked(old)
	}
	s.insertLocked(&entry{id: id, version: version, deleted: deleted, pending: pending, size: int64(len(id)) + entryOverhead})
}

// deleted applies a delete of ours made with ticket t: a pending floor if
// the subscription that tracked it is still the current one, else a drop.
func (s *store) deleted(id string, t ticket) {
	s.mu.RLock()
	current := t.subscriber != "" && s.live && s.gen == t.gen
	s.mu.RUnlock()
	s.floor(id, 0, true, current)
}

// flush empties the store; live says whether fills may follow (a flush
// event on a working subscription) or not (the subscription broke).
func (s *store) flush(live bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.entries) > 0 || s.live {
		s.stats.flushes.Add(1)
	}
	s.entries = map[string]*entry{}
	s.order.Init()
	s.bytes = 0
	s.gen++
	s.live = live
	if !live {
		s.sub = ""
	}
}

func (s *store) insertLocked(e *entry) {
	e.el = s.order.PushBack(e)
	s.entries[e.id] = e
	s.bytes += e.size
	for s.bytes > s.budget {
		s.evictLocked()
	}
}

// evictLocked drops the oldest entry not hit since it was last passed over.
// Dropping a tombstone loses a floor, so it also changes gen.
func (s *store) evictLocked() {
	for {
		e := s.order.Front().Value.(*entry)
		if e.obj != nil && e.ref.Swap(false) {
			s.order.MoveToBack(e.el)
			continue
		}
		if e.obj == nil {
			s.gen++
		}
		s.removeLocked(e)
		return
	}
}

func (s *store) removeLocked(e *entry) {
	s.order.Remove(e.el)
	delete(s.entries, e.id)
	s.bytes -= e.size
}

// takeTicket is called before a read through the sidecar.
func (s *store) takeTicket() ticket {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.live {
		return ticket{gen: s.gen}
	}
	return ticket{gen: s.gen, subscriber: s.sub}
}

// up records a subscription's hello: fills may start.
func (s *store) up(sub string, lease, maxAge time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.live, s.sub = true, sub
	s.lease.Store(int64(lease))
	s.maxAge.Store(int64(maxAge))
	s.lastHeard.Store(time.Now().UnixNano())
}

// push stores an object the sidecar predicted, in stream order.
func (s *store) push(o *lookaheadv1.Object) {
	s.stats.pushes.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live && o != nil {
		s.putLocked(o, true)
	}
}
