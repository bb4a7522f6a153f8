package fetch

import (
	"context"
)

// Changed applies a write-side event to id: a Put, Delete or Invalidate
// through this sidecar, a change the origin's Watch announced. It is the one
// way such an event enters: the id's version floor rises (version 0 when
// unknown, see cache.InvalidateVersion) and any fetch in flight for it is
// forgotten, so no answer read before the event is served or cached after
// it. It reports whether a cached copy was dropped.
func (f *Fetcher) Changed(id string, version uint64, deleted bool) bool {
	f.flights.forget(id)
	return f.cache.InvalidateVersion(id, version, deleted)
}

// Clear empties the cache and forgets every fetch in flight, for an origin
// whose history restarted or whose dataset changed: nothing read before is
// served or cached after.
func (f *Fetcher) Clear() {
	f.flights.forgetAll()
	f.cache.Clear()
}

// recheckOlder refetches, once and outside the in-flight table, the objects
// of out that the origin answered older than a version it had announced
// (a replica behind its primary, a cache in front of the origin). A copy
// still older is answered marked stale when stale answers are enabled
// (StaleIfError or StaleWhileRevalidate), and is ErrOlderThanAnnounced
// otherwise: it is never answered as fresh.
func (f *Fetcher) recheckOlder(ctx context.Context, out map[string]Result) error {
	var ids []string
	for id, r := range out {
		if r.Stale {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	b := &batch{ids: ids, call: newCall(false)}
	f.run(ctx, b, false)
	for _, id := range ids {
		if o, ok := b.call.objs[id]; ok && b.call.err == nil && !b.call.older[id] {
			out[id] = Result{Object: o, Status: StatusMiss}
		}
	}
	still := 0
	for _, id := range ids {
		if out[id].Stale {
			still++
		}
	}
	if still == 0 {
		return nil
	}
	if f.cfg.StaleIfError <= 0 && f.cfg.StaleWhileRevalidate <= 0 {
		return ErrOlderThanAnnounced
	}
	f.cfg.Metrics.StaleServed("older", still)
	return nil
}
