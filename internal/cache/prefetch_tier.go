package cache

import (
	"time"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// This file holds the Cache methods that work on the prefetch tier and the
// negative entries, and the bookkeeping that keeps ristretto's asynchronous
// Sets from letting an old version shadow a new one. All run with c.mu held.

// liveLocked returns the live node for id in l, dropping it if it expired.
// An expired prefetched object that was never used is wasted (t may be nil
// for the negative entries, which hold no object).
func (c *Cache) liveLocked(l *lru, id string, now time.Time, t *tally) *node {
	n := l.get(id)
	if n == nil {
		return nil
	}
	if n.expired(now) {
		l.remove(n)
		if t != nil {
			t.discard(n)
		}
		return nil
	}
	return n
}

// useLocked records a demand for the prefetched node n: the first use counts
// PrefetchUsed, and the object is sent to the main tier unless a move is
// already under way. The node stays in the prefetch tier, marked used, so it
// answers until ristretto has applied the Set; settledLocked then drops it.
func (c *Cache) useLocked(n *node, now time.Time, t *tally) {
	if !n.used {
		n.used = true
		t.used++
	}
	if n.promoSeq != 0 {
		return
	}
	var ttl time.Duration
	if !n.expires.IsZero() {
		ttl = n.expires.Sub(now) // > 0: n is live
	}
	// No Wait here: this is the hit path.
	// Refused: the main tier holds this copy or a newer one already; the
	// promotion settles like an accepted one, leaving the prefetch tier.
	if c.main.store(n.id, &entry{obj: n.obj, cost: n.cost, expires: n.expires, fresh: n.fresh}, ttl) != setDropped {
		c.issued++
		n.promoSeq = c.issued
		c.promoting = append(c.promoting, n)
		return
	}
	t.dropped++
	c.pre.touch(n) // the only copy: keep it like any recently used object
}

// insertLocked adds n to the prefetch tier, first dropping expired objects
// at its old end, then evicting the oldest until n fits. An object larger
// than the whole tier is not kept.
func (c *Cache) insertLocked(n *node, now time.Time, t *tally) {
	t.buf = c.pre.pruneExpired(now, t.buf[:0])
	for _, o := range t.buf {
		t.discard(o)
	}
	t.buf, _ = c.pre.add(n, t.buf[:0])
	for _, o := range t.buf {
		t.evict(o)
	}
	clear(t.buf)
}

// dropLocked removes id from both tiers and reports whether either held a
// live object. Call settleLocked first, so that no Set of id is pending.
func (c *Cache) dropLocked(id string, now time.Time, t *tally) bool {
	had := false
	if c.main.has(id) {
		c.main.rc.Del(id)
		had = true
	}
	if n := c.pre.get(id); n != nil {
		c.pre.remove(n)
		t.discard(n)
		had = had || !n.expired(now)
	}
	return had
}

// mainLocked returns the main tier's live entry for id without feeding
// ristretto's admission counters when it holds none: speculation should not
// make ids look popular. Call settleLocked first, so that no Set is pending.
func (c *Cache) mainLocked(id string) (*entry, bool) {
	if !c.main.has(id) {
		return nil, false
	}
	return c.main.get(id, c.cfg.Now)
}

func (c *Cache) forgetNegativeLocked(id string) {
	if n := c.neg.get(id); n != nil {
		c.neg.remove(n)
	}
}

// settleLocked waits, if any main-tier Set may still be buffered, until
// ristretto has applied them all. Every write path calls it first: ristretto
// admits the first of two buffered Sets of a key and rejects the second, so
// deciding whether a copy is newer than the main tier's, and writing it, is
// only safe once the main tier's Get shows every earlier Set. Gets that need
// mu wait meanwhile; a Get answered by the main tier does not.
func (c *Cache) settleLocked() {
	if c.settled == c.issued {
		return
	}
	seq := c.issued
	c.main.rc.Wait()
	c.settledLocked(seq)
}

// settledLocked records that every Set numbered up to seq has been applied,
// and finishes those promotions: a node the main tier now holds has moved and
// leaves the prefetch tier (used, so not wasted); a node whose Set admission
// refused stays, the only copy, and is promoted again on its next hit.
func (c *Cache) settledLocked(seq uint64) {
	c.settled = max(c.settled, seq)
	keep := c.promoting[:0]
	for _, n := range c.promoting {
		if n.promoSeq > seq {
			keep = append(keep, n)
			continue
		}
		n.promoSeq = 0
		if c.pre.get(n.id) != n {
			continue // dropped or replaced meanwhile
		}
		if c.main.has(n.id) {
			c.pre.remove(n)
		} else {
			c.pre.touch(n)
		}
	}
	clear(c.promoting[len(keep):])
	c.promoting = keep
}

// expiry is when an object stored at now is dropped: its TTL plus the time
// it is kept stale; zero without a TTL.
func (c *Cache) expiry(now time.Time) time.Time {
	if c.cfg.TTL <= 0 {
		return time.Time{}
	}
	return now.Add(c.hardTTL())
}

// freshUntil is when an object stored at now turns stale; zero without a TTL.
func (c *Cache) freshUntil(now time.Time) time.Time {
	if c.cfg.TTL <= 0 {
		return time.Time{}
	}
	return now.Add(c.cfg.TTL)
}

// hardTTL is how long ristretto keeps an object: 0 (forever) without a TTL.
func (c *Cache) hardTTL() time.Duration {
	if c.cfg.TTL <= 0 {
		return 0
	}
	return c.cfg.TTL + c.cfg.StaleFor
}

// renews reports whether a copy at version inc should replace a cached one
// at cur that is fresh until fresh: when it is newer, when neither version
// is known, or when it is the same version and the cached copy went stale
// (a refetch restarts its TTL).
func renews(inc, cur uint64, fresh, now time.Time) bool {
	if replaces(inc, cur) {
		return true
	}
	stale, _ := staleness(fresh, now)
	return inc == cur && stale
}

// replaces reports whether a copy at version inc replaces one at cur: when it
// is newer, or when neither version is known (0) and the latest write wins.
func replaces(inc, cur uint64) bool { return inc > cur || inc == 0 && cur == 0 }

// newestByID drops nil objects and keeps, of several copies of one id, the
// one that replaces the others, in order of first appearance. Ristretto
// would keep the first of two Sets of a key in one batch, not the newest.
func newestByID(objs []*graph.Object) []*graph.Object {
	if len(objs) == 1 && objs[0] != nil {
		return objs
	}
	out := make([]*graph.Object, 0, len(objs))
	at := make(map[string]int, len(objs))
	for _, o := range objs {
		if o == nil {
			continue
		}
		if i, ok := at[o.ID]; ok {
			if replaces(o.Version, out[i].Version) {
				out[i] = o
			}
			continue
		}
		at[o.ID] = len(out)
		out = append(out, o)
	}
	return out
}

// tally collects what a locked section observed, for reporting after the
// lock is released.
type tally struct {
	used, dropped, evicted, wasted int
	staleFills                     int // fills refused by a version floor
	wastedBytes                    int64
	buf                            []*node // scratch for insertLocked
}

// discard accounts for a prefetched node leaving the tier: wasted if unused.
func (t *tally) discard(n *node) {
	if !n.used {
		t.wasted++
		t.wastedBytes += n.cost
	}
}

// evict accounts for a node evicted for room.
func (t *tally) evict(n *node) {
	t.evicted++
	t.discard(n)
}

// report adds a tally to the metrics; call it without c.mu.
func (c *Cache) report(t *tally) {
	if t.used > 0 {
		c.m.PrefetchUsed.Add(float64(t.used))
	}
	if t.staleFills > 0 {
		c.m.StaleFills.Add(float64(t.staleFills))
	}
	if t.dropped > 0 {
		c.m.SetsDropped.Add(float64(t.dropped))
	}
	if t.evicted > 0 {
		c.m.EvictionsPrefetch.Add(float64(t.evicted))
	}
	if t.wasted > 0 {
		c.m.PrefetchWasted.Add(float64(t.wasted))
		c.m.PrefetchWastedBytes.Add(float64(t.wastedBytes))
	}
}
