package cache

import (
	"time"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// InvalidateVersion applies a change: id now has version (or was deleted at
// version); version 0 is a change of unknown version (an Invalidate, a
// Delete whose version the origin did not say). Cached copies older than
// version are dropped, all copies if deleted or the version is unknown. The
// change is remembered as a floor for FloorTTL, numbered after every change
// before it: a fetch that started before the change (Changes was lower when
// it began) cannot store what it read, whatever its version, and no fetch
// can store a copy older than version (refused fills are counted in
// lookahead_cache_stale_fills_total). It returns whether a copy was dropped.
func (c *Cache) InvalidateVersion(id string, version uint64, deleted bool) bool {
	c.life.RLock()
	defer c.life.RUnlock()
	if c.closed {
		return false
	}
	now := c.cfg.Now()
	var t tally
	c.mu.Lock()
	c.settleLocked()
	all := deleted || version == 0 // decided by this change, not the merged floor
	exists := !deleted
	if f := c.liveLocked(c.floors, id, now, nil); f != nil {
		switch {
		case version == 0: // unknown: the known floor stands
			version, deleted = f.version, deleted || f.deleted
		case f.version > version: // an older change arrived late
			version, deleted = f.version, f.deleted
		}
		c.floors.remove(f)
	}
	seq := c.changes.Add(1)
	c.floors.add(&node{id: id, cost: 1, expires: now.Add(c.cfg.FloorTTL), version: version, deleted: deleted, seq: seq}, nil)
	dropped := false
	if e, ok := c.mainLocked(id); ok && (all || e.obj.Version < version) {
		c.main.rc.Del(id)
		dropped = true
	}
	if n := c.liveLocked(c.pre, id, now, &t); n != nil && (all || n.obj.Version < version) {
		c.pre.remove(n)
		t.discard(n)
		dropped = true
	}
	if exists {
		c.forgetNegativeLocked(id) // it exists now, or was invalidated: ask again
	}
	c.mu.Unlock()
	c.report(&t)
	return dropped
}

// Changes numbers the changes applied so far. A fetch reads it before it
// asks the origin and hands it to the fill (FillDemand, FillPrefetched): a
// change numbered above it happened while the fetch was under way.
func (c *Cache) Changes() uint64 { return c.changes.Load() }

// Unchecked is the since of a fill that no change can predate: only version
// floors apply to it.
const Unchecked = ^uint64(0)

// belowFloorLocked reports whether o, read by a fetch that began when
// Changes was since, must not be stored: a change of its id came after the
// fetch began (or a Clear did), or the origin announced a deletion at or
// after o's version, or a newer version. older is true in the last two
// cases: the origin answered with a copy older than one it announced. An
// object of unknown version (0) is below any known floor.
func (c *Cache) belowFloorLocked(o *graph.Object, since uint64, now time.Time) (refuse, older bool) {
	if c.cleared > since {
		return true, false // read before Clear: from a history that ended
	}
	f := c.liveLocked(c.floors, o.ID, now, nil)
	switch {
	case f == nil:
		return false, false
	case f.seq > since:
		return true, false
	case f.version == 0:
		return false, false // a change of unknown version orders by seq alone
	case f.deleted:
		older = o.Version <= f.version
	default:
		older = o.Version < f.version
	}
	return older, older
}

// Clear drops every object, negative entry and floor: for an origin whose
// history restarted, where nothing cached can be verified any more. It
// counts as a change of every id: no fetch that began before it stores
// anything after it.
func (c *Cache) Clear() {
	c.life.RLock()
	defer c.life.RUnlock()
	if c.closed {
		return
	}
	c.mu.Lock()
	c.shutdown.Store(true) // ristretto reports its Clear as evictions: not ours
	c.main.rc.Clear()
	c.shutdown.Store(false)
	var t tally
	for n := c.pre.oldest(); n != nil; n = c.pre.oldest() {
		c.pre.remove(n)
		t.discard(n)
	}
	c.neg = newLRU(int64(c.cfg.NegativeEntries))
	c.floors = newLRU(int64(c.cfg.FloorEntries))
	c.promoting = nil
	c.settled = c.issued
	c.cleared = c.changes.Add(1)
	c.mu.Unlock()
	c.report(&t)
}
