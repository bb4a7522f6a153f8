package cache

import (
	"time"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// InvalidateVersion applies a change the origin announced: id now has
// version (or was deleted at version). Cached copies older than version are
// dropped, all copies if deleted, and version is remembered as a floor for
// FloorTTL: a fetch that started before the change and completes after it
// cannot store the older copy it read (refused fills are counted in
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
	if f := c.liveLocked(c.floors, id, now, nil); f != nil {
		if f.version > version {
			version, deleted = f.version, f.deleted // an older change arrived late
		}
		c.floors.remove(f)
	}
	c.floors.add(&node{id: id, cost: 1, expires: now.Add(c.cfg.FloorTTL), version: version, deleted: deleted}, nil)
	dropped := false
	if e, ok := c.mainLocked(id); ok && (deleted || e.obj.Version < version) {
		c.main.rc.Del(id)
		dropped = true
	}
	if n := c.liveLocked(c.pre, id, now, &t); n != nil && (deleted || n.obj.Version < version) {
		c.pre.remove(n)
		t.discard(n)
		dropped = true
	}
	if !deleted {
		c.forgetNegativeLocked(id) // it exists now
	}
	c.mu.Unlock()
	c.report(&t)
	return dropped
}

// belowFloorLocked reports whether o is older than what the origin has
// announced for its id: a deletion at or after its version, or a newer
// version. An object of unknown version (0) is below any floor.
func (c *Cache) belowFloorLocked(o *graph.Object, now time.Time) bool {
	f := c.liveLocked(c.floors, o.ID, now, nil)
	if f == nil {
		return false
	}
	if f.deleted {
		return o.Version <= f.version
	}
	return o.Version < f.version
}

// Clear drops every object, negative entry and floor: for an origin whose
// history restarted, where nothing cached can be verified any more.
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
	c.mu.Unlock()
	c.report(&t)
}
