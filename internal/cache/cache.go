// Package cache holds lookahead's objects in two tiers: a main tier for what
// applications demanded and a bounded prefetch tier for speculation.
package cache

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// Tier names where a cached object was found.
type Tier uint8

// Tiers. The zero Tier is no tier: the answer of a negative entry.
const (
	TierMain     Tier = iota + 1 // demanded objects, in ristretto
	TierPrefetch                 // speculative objects, lookahead's own LRU
)

// String returns the tier's metrics label.
func (t Tier) String() string {
	switch t {
	case TierMain:
		return "main"
	case TierPrefetch:
		return "prefetch"
	}
	return "none"
}

// Lookup is the answer of Get.
type Lookup struct {
	Object   *graph.Object // nil for a negative entry
	Tier     Tier          // where Object was found (main for a walk's, see FillWalked); zero for a negative entry
	Negative bool          // the id is remembered not to exist
	// Stale is true once the object's TTL has passed: it is kept for
	// Config.StaleFor, and StaleFor says how long it has been stale.
	Stale    bool
	StaleFor time.Duration
}

// staleness reports whether an object fresh until fresh is stale at now.
func staleness(fresh, now time.Time) (bool, time.Duration) {
	if fresh.IsZero() || now.Before(fresh) {
		return false, 0
	}
	return true, now.Sub(fresh)
}

// Cache is the two-tier object cache. Its methods are safe for concurrent use.
//
// The main tier is ristretto: fast, concurrent, admission by TinyLFU, but its
// Sets are lossy (a full buffer drops them) and asynchronous (visible only
// once its goroutine applies them). The prefetch tier is lookahead's own LRU
// bounded by bytes, synchronous and lossless; speculation lands only there,
// so it can never evict an object the main tier holds. A prefetched object
// moves to the main tier on its first hit, and so does a walk's object (see
// FillWalked), which waits there as a demanded one until it is read again.
//
// Versions: an older copy never replaces a newer one, in either tier. A copy
// replaces a cached one if its version is greater, or if both are 0 (unknown:
// nothing to compare, so the latest write wins). A known version therefore
// always beats 0, and 0 never replaces a known one. A copy at the cached
// known version is not stored again, except that demanding an object the
// prefetch tier holds moves it to the main tier.
type Cache struct {
	cfg  Config  // defaults applied
	m    Metrics // every counter set
	main *mainTier

	// life keeps ristretto from being closed under a caller: ristretto panics
	// when a Set, Get or Wait races with its Close. Every method holds it for
	// reading, Close for writing.
	life   sync.RWMutex
	closed bool // guarded by life
	// shutdown is set by Close before it closes ristretto, which then evicts
	// everything; callbacks read it to not count that as cache behaviour.
	shutdown atomic.Bool

	// mu guards the fields below. Lock order: life, then mu. Ristretto's
	// callbacks never take mu, so ristretto calls (including a blocking Del
	// or Wait) may be made with mu held.
	mu     sync.Mutex
	pre    *lru // prefetch tier, budget PrefetchBytes, cost = object bytes
	neg    *lru // remembered absences, budget NegativeEntries, cost 1 each
	floors *lru // version floors, budget FloorEntries, cost 1 each; see InvalidateVersion
	// issued counts main-tier Sets ristretto accepted; settled is the value
	// issued had when the last completed Wait began. Sets numbered above
	// settled may still sit in ristretto's buffer, invisible to its Get.
	issued, settled uint64
	// changes numbers InvalidateVersion calls; written under mu, read
	// without it by Changes.
	changes atomic.Uint64
	cleared uint64 // the changes number of the last Clear
	// promoting lists prefetch nodes with an unsettled promotion (promoSeq
	// non-zero); at most one entry per node, so it is bounded by pre.len().
	promoting []*node
}

// New builds a cache; m's nil counters count nothing. Close releases
// ristretto's goroutines.
func New(cfg Config, m Metrics) (*Cache, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	c := &Cache{
		cfg:    cfg,
		m:      m.withNops(),
		pre:    newLRU(cfg.PrefetchBytes),
		neg:    newLRU(int64(cfg.NegativeEntries)),
		floors: newLRU(int64(cfg.FloorEntries)),
	}
	main, err := newMainTier(cfg.MainBytes, mainCallbacks{
		evicted: func() {
			if !c.shutdown.Load() {
				c.m.EvictionsMain.Inc()
			}
		},
		rejected: func() {
			if !c.shutdown.Load() {
				c.m.SetsRejected.Inc()
			}
		},
	}, c.refuses)
	if err != nil {
		return nil, fmt.Errorf("main tier: %w", err)
	}
	c.main = main
	return c, nil
}

// Get answers id from the main tier, then the prefetch tier, then the
// negative entries, and counts the hit, miss or negative answer. A prefetch
// hit moves the object to the main tier (counting PrefetchUsed on its first
// use) without waiting: until ristretto has applied the move, the prefetch
// tier keeps answering for it.
func (c *Cache) Get(id string) (Lookup, bool) {
	c.life.RLock()
	defer c.life.RUnlock()
	if c.closed {
		return Lookup{}, false
	}
	if e, ok := c.main.get(id, c.cfg.Now); ok {
		c.m.HitsMain.Inc()
		if e.fresh.IsZero() { // no TTL: the hit path reads no clock
			return Lookup{Object: e.obj, Tier: TierMain}, true
		}
		stale, age := staleness(e.fresh, c.cfg.Now())
		return Lookup{Object: e.obj, Tier: TierMain, Stale: stale, StaleFor: age}, true
	}
	now := c.cfg.Now()
	var t tally
	c.mu.Lock()
	n := c.liveLocked(c.pre, id, now, &t)
	if n != nil {
		c.useLocked(n, now, &t)
	}
	neg := n == nil && c.liveLocked(c.neg, id, now, nil) != nil
	c.mu.Unlock()
	c.report(&t)
	switch {
	case n != nil:
		tier := TierPrefetch
		if n.demanded {
			tier = TierMain // a walk's object, moving to the main tier now
			c.m.HitsMain.Inc()
		} else {
			c.m.HitsPrefetch.Inc()
		}
		stale, age := staleness(n.fresh, now)
		return Lookup{Object: n.obj, Tier: tier, Stale: stale, StaleFor: age}, true
	case neg:
		c.m.NegativeHits.Inc()
		return Lookup{Negative: true}, true
	}
	c.m.Misses.Inc()
	return Lookup{}, false
}

// Peek is Get without side effects on lookahead's side: no counting, no
// promotion. known is true when the cache can answer: with the object, or
// with nil for an id remembered not to exist. Reading an object from the
// main tier still counts as an access in ristretto's admission policy, which
// has no silent read; probing an id it does not hold does not.
func (c *Cache) Peek(id string) (obj *graph.Object, known bool) {
	c.life.RLock()
	defer c.life.RUnlock()
	if c.closed {
		return nil, false
	}
	// has first: most ids a planner asks about are not cached, and probing
	// them with Get would feed ristretto's admission counters for nothing.
	now := c.cfg.Now()
	if c.main.has(id) {
		if e, ok := c.main.get(id, c.cfg.Now); ok {
			if stale, _ := staleness(e.fresh, now); stale {
				return nil, false // to be fetched again, not followed
			}
			return e.obj, true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.pre.get(id); n != nil && !n.expired(now) {
		if stale, _ := staleness(n.fresh, now); stale {
			return nil, false
		}
		return n.obj, true
	}
	if n := c.neg.get(id); n != nil && !n.expired(now) {
		return nil, true
	}
	return nil, false
}

// Promote moves id from the prefetch tier to the main tier as a hit there
// would, counting PrefetchUsed on first use but no hit: for a demand that
// was answered by joining the prefetch of id still in flight. It reports
// whether the prefetch tier held id.
func (c *Cache) Promote(id string) bool {
	c.life.RLock()
	defer c.life.RUnlock()
	if c.closed {
		return false
	}
	now := c.cfg.Now()
	var t tally
	c.mu.Lock()
	n := c.liveLocked(c.pre, id, now, &t)
	if n != nil {
		c.useLocked(n, now, &t)
	}
	c.mu.Unlock()
	c.report(&t)
	return n != nil
}

// Invalidate drops ids from both tiers and forgets negative entries for them.
// It returns how many of the ids had an object cached. An unused prefetched
// object dropped here counts as wasted.
func (c *Cache) Invalidate(ids ...string) int {
	if len(ids) == 0 {
		return 0
	}
	c.life.RLock()
	defer c.life.RUnlock()
	if c.closed {
		return 0
	}
	now := c.cfg.Now()
	var t tally
	n := 0
	c.mu.Lock()
	c.settleLocked()
	for _, id := range ids {
		if c.dropLocked(id, now, &t) {
			n++
		}
		c.forgetNegativeLocked(id)
	}
	c.mu.Unlock()
	c.report(&t)
	return n
}

// TierStats is what one tier holds.
type TierStats struct{ Bytes, Objects int64 }

// Stats returns the bytes and objects each tier holds, keyed by the tiers'
// names (Tier.String). The prefetch tier is exact. The
// main tier counts what ristretto stores, plus Sets still in its buffer that
// its admission policy is about to reject: exact whenever no Set is pending.
// Objects expired by TTL count until ristretto's periodic sweep drops them,
// seconds later. Negative entries hold no object and are not counted.
func (c *Cache) Stats() map[string]TierStats {
	c.life.RLock()
	defer c.life.RUnlock()
	s := map[string]TierStats{
		TierMain.String():     {Bytes: c.main.bytes.Load(), Objects: c.main.objects.Load()},
		TierPrefetch.String(): {},
	}
	if !c.closed {
		c.mu.Lock()
		s[TierPrefetch.String()] = TierStats{Bytes: c.pre.cost, Objects: int64(c.pre.len())}
		c.mu.Unlock()
	}
	return s
}

// Unread counts the speculative objects the prefetch tier holds that no
// request has read yet, and their bytes: what speculation is betting on
// now. It walks the tier, so it is for scrapes, not for hot paths.
func (c *Cache) Unread() (objects, bytes int64) {
	c.life.RLock()
	defer c.life.RUnlock()
	if c.closed {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.pre.items {
		if !n.used {
			objects++
			bytes += n.cost
		}
	}
	return objects, bytes
}

// PrefetchBytes is the prefetch tier's budget in object bytes.
func (c *Cache) PrefetchBytes() int64 { return c.cfg.PrefetchBytes }

// Close stops ristretto's goroutines and empties the cache. It waits for
// calls in progress; later calls find nothing and store nothing. It is
// idempotent.
func (c *Cache) Close() {
	c.life.Lock()
	defer c.life.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	c.shutdown.Store(true)
	c.main.rc.Close()
	c.mu.Lock()
	c.pre = newLRU(c.cfg.PrefetchBytes)
	c.neg = newLRU(int64(c.cfg.NegativeEntries))
	c.floors = newLRU(int64(c.cfg.FloorEntries))
	c.promoting = nil
	c.mu.Unlock()
}
