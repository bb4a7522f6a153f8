package cache

import (
	"time"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// AddDemand stores objects an application asked for in the main tier. When
// it returns, Get finds every one of them: in the main tier, or in the
// prefetch tier if ristretto's buffer dropped its Set (counted in
// SetsDropped; kept as demanded, so its eviction is not wasted). The
// exceptions are an object ristretto's admission policy refused (counted in
// SetsRejected) and a dropped one larger than the whole prefetch tier.
//
// A copy older than a cached one is ignored (see Cache for the version rule).
// A negative entry for an object's id is forgotten.
func (c *Cache) AddDemand(objs ...*graph.Object) { c.FillDemand(Unchecked, objs...) }

// FillDemand is AddDemand for objects a fetch read that began when Changes
// was since: a copy of an id changed since then is not stored. It returns
// the ids of the objects that were older than a version the origin had
// announced (see InvalidateVersion), which are not stored either.
func (c *Cache) FillDemand(since uint64, objs ...*graph.Object) (older []string) {
	return c.fill(since, newestByID(objs), c.storeDemandLocked, c.waitSets)
}

// waitSets makes every main-tier Set up to seq visible to Get. One Wait for
// a whole fill costs about as long as ristretto takes to apply what is
// buffered, microseconds, while the demand path has just paid an origin
// round trip; it runs without mu so that Get is not held up.
func (c *Cache) waitSets(seq uint64) {
	c.main.rc.Wait()
	c.mu.Lock()
	c.settledLocked(seq)
	c.mu.Unlock()
}

// storeDemandLocked stores one demanded object: in the main tier, or in the
// prefetch tier (as used) when ristretto's buffer drops the Set. The main
// tier's copy is compared within the Set (Cache.refuses): a cold object
// costs one ristretto call, not a Get and a Set.
func (c *Cache) storeDemandLocked(o *graph.Object, f *fillState) {
	n := c.liveLocked(c.pre, o.ID, f.now, &f.t)
	if n != nil && n.obj.Version > o.Version {
		return // the prefetch tier holds a newer version
	}
	e := &entry{obj: o, cost: o.Size(), expires: f.expires, fresh: f.fresh}
	switch c.main.store(o.ID, e, c.hardTTL()) {
	case setRefused:
		return // the main tier holds this version, fresh, or a newer one
	case setAccepted:
		c.issued++
		if n != nil {
			c.pre.remove(n) // superseded by the demanded copy
		}
		return
	}
	f.t.dropped++
	if n != nil {
		c.pre.remove(n)
	}
	c.insertLocked(&node{id: o.ID, obj: o, cost: e.cost, expires: f.expires, fresh: f.fresh, used: true}, f.now, &f.t)
}

// refuses is the main tier's version rule (see Cache), checked by ristretto
// when a Set finds cur stored under inc's key: an expired copy is replaced,
// a live one only by a copy that renews it.
func (c *Cache) refuses(inc, cur *entry) bool {
	now := c.cfg.Now()
	if expired(cur.expires, now) {
		return false
	}
	return !renews(inc.obj.Version, cur.obj.Version, cur.fresh, now)
}

// AddPrefetched stores speculative objects in the prefetch tier, evicting
// its oldest objects when it is full (counted as evictions, and as wasted if
// never used). Objects never go to the main tier from here, so speculation
// cannot evict what was demanded. An object the main tier holds at the same
// or a newer version is skipped; an older main-tier copy is dropped.
func (c *Cache) AddPrefetched(objs ...*graph.Object) { c.FillPrefetched(Unchecked, objs...) }

// FillPrefetched is AddPrefetched for objects a fetch read that began when
// Changes was since (see FillDemand, also for older).
func (c *Cache) FillPrefetched(since uint64, objs ...*graph.Object) (older []string) {
	// A copy the batch itself replaces is not counted as wasted.
	return c.fill(since, newestByID(objs), c.storePrefetchedLocked, nil)
}

// storePrefetchedLocked stores one speculative object in the prefetch tier.
func (c *Cache) storePrefetchedLocked(o *graph.Object, f *fillState) {
	c.storeInPrefetchLocked(o, o.Size(), false, f)
}

// storeInPrefetchLocked stores o, of Size cost, in the prefetch tier,
// speculative or demanded, unless a copy either tier holds is to stay; an
// outdated main-tier copy is dropped.
func (c *Cache) storeInPrefetchLocked(o *graph.Object, cost int64, demanded bool, f *fillState) {
	if cur, ok := c.mainLocked(o.ID); ok {
		// A demand replaces it by the version rule; speculation only with
		// a newer version, or with a refetch of the same one once it went
		// stale (an unknown version never replaces a fresh copy).
		stale, _ := staleness(cur.fresh, f.now)
		spec := o.Version < cur.obj.Version || o.Version == cur.obj.Version && !stale
		if demanded && !renews(o.Version, cur.obj.Version, cur.fresh, f.now) || !demanded && spec {
			return
		}
		c.main.rc.Del(o.ID) // outdated; Del is ordered after every earlier Set
	}
	if n := c.liveLocked(c.pre, o.ID, f.now, &f.t); n != nil {
		if !renews(o.Version, n.obj.Version, n.fresh, f.now) {
			return
		}
		c.pre.remove(n)
		f.t.discard(n)
	}
	c.insertLocked(&node{id: o.ID, obj: o, cost: cost, expires: f.expires, fresh: f.fresh, used: demanded, demanded: demanded}, f.now, &f.t)
}

// FillWalked is FillDemand for the objects of a bulk demand read, a graph
// walk: they wait in the prefetch tier, as demanded objects (a hit on one
// is a main-tier hit, and its eviction is not wasted), for a second read,
// which moves them to the main tier as a prefetched object's first hit
// does. A walk reads thousands of objects once, and a ristretto Set costs
// about twice an insert into the prefetch tier (its hashing, its buffer and
// its goroutine's admission and map), so a one-off walk pays only for the
// cheaper one and never floods ristretto's admission; what is read again
// pays the Set then. Like speculation, the objects compete for the prefetch
// tier's bytes, oldest out first. An object the main tier holds at the same
// version, fresh, or a newer one is not stored; an older main-tier copy is
// dropped. An object larger than the whole prefetch tier goes to the main
// tier as FillDemand stores it.
//
// Its objects are stored as they come, without a pass for copies of one id
// (see newestByID): the prefetch tier is written at once, so a later copy
// replaces an earlier one by the version rule, and a replaced walked copy is
// not wasted speculation.
func (c *Cache) FillWalked(since uint64, objs ...*graph.Object) (older []string) {
	big := false // an object went to the main tier: wait for it as FillDemand does
	return c.fill(since, objs, func(o *graph.Object, f *fillState) {
		if cost := o.Size(); cost > c.pre.budget {
			if big {
				c.settleLocked() // a copy of o's id may be among the Sets pending
			}
			big = true
			c.storeDemandLocked(o, f)
		} else {
			c.storeInPrefetchLocked(o, cost, true, f)
		}
	}, func(seq uint64) {
		if big {
			c.waitSets(seq)
		}
	})
}

// fillState is what the objects of one fill are stored with.
type fillState struct {
	now, expires, fresh time.Time
	t                   tally
}

// fill is what every fill shares: the cache's
// life lock, settled Sets, the version floors (a refused object is counted,
// and returned in older when the origin had announced a newer version) and
// forgotten absences; store keeps each object that passes, under mu. after,
// if not nil, runs once mu is released, still within the life lock, with
// the number of the last main-tier Set issued.
func (c *Cache) fill(since uint64, objs []*graph.Object, store func(*graph.Object, *fillState), after func(seq uint64)) (older []string) {
	if len(objs) == 0 {
		return nil
	}
	c.life.RLock()
	defer c.life.RUnlock()
	if c.closed {
		return nil
	}
	f := fillState{now: c.cfg.Now()}
	f.expires, f.fresh = c.expiry(f.now), c.freshUntil(f.now)
	c.mu.Lock()
	c.settleLocked()
	for _, o := range objs {
		if o == nil {
			continue
		}
		if refuse, old := c.belowFloorLocked(o, since, f.now); refuse {
			f.t.staleFills++
			if old {
				older = append(older, o.ID)
			}
			continue
		}
		c.forgetNegativeLocked(o.ID)
		store(o, &f)
	}
	seq := c.issued
	c.mu.Unlock()
	c.report(&f.t)
	if after != nil {
		after(seq)
	}
	return older
}

// AddMissing remembers that ids do not exist, for NegativeTTL. Cached copies
// of them are dropped first, as Invalidate does: the origin's answer is the
// newer one.
func (c *Cache) AddMissing(ids ...string) { c.FillMissing(Unchecked, ids...) }

// FillMissing is AddMissing for an answer of a fetch that began when Changes
// was since: an id changed since then, or known to exist at a version, is
// not remembered as missing.
func (c *Cache) FillMissing(since uint64, ids ...string) {
	if len(ids) == 0 {
		return
	}
	c.life.RLock()
	defer c.life.RUnlock()
	if c.closed {
		return
	}
	now := c.cfg.Now()
	var t tally
	c.mu.Lock()
	c.settleLocked()
	t.buf = c.neg.pruneExpired(now, t.buf[:0])
	clear(t.buf)
	for _, id := range ids {
		if f := c.liveLocked(c.floors, id, now, nil); c.cleared > since || f != nil && (f.seq > since || !f.deleted && f.version > 0) {
			t.staleFills++ // the id was written after this answer was read
			continue
		}
		c.dropLocked(id, now, &t)
		if c.cfg.NegativeTTL < 0 {
			continue
		}
		if n := c.neg.get(id); n != nil {
			c.neg.remove(n)
		}
		// Evicted absences are simply forgotten: the cost is a refetch.
		c.neg.add(&node{id: id, cost: 1, expires: now.Add(c.cfg.NegativeTTL)}, nil)
	}
	c.mu.Unlock()
	c.report(&t)
}
