package fetch

import (
	"context"
	"time"

	"github.com/lookahead-dev/lookahead/internal/cache"
)

// lookup is what the cache answered for the ids of one request.
type lookup struct {
	ids        []string // the request's ids, without duplicates
	results    []Result // per id of ids; Object nil = not answered (yet)
	need       []string // to fetch now
	revalidate []string // answered stale, to refetch in the background
	fallback   []Result // per id of ids, the stale copy to answer if the origin fails; nil = none
	fallbacks  int      // how many ids have one
}

// Get answers ids from the cache and fetches all misses of the request at
// once, in one round trip per BatchSize ids (fewer when other requests'
// misses gather with them), once its admission lets them (see
// SetAdmission). Cached copies past their TTL follow the stale rules of
// Config.
func (f *Fetcher) Get(ctx context.Context, ids []string) (*Answer, error) {
	a := &Answer{}
	l := f.lookup(dedupe(ids))
	if len(l.need) > 0 {
		a.Began = time.Now() // only misses need it (see Answer.Began): not on the hit path
		release, err := f.admit(ctx)
		if err != nil {
			return nil, err
		}
		got, err := f.demand(ctx, l.need)
		release()
		switch {
		case err != nil && l.fallbacks == len(l.need) && ctx.Err() == nil:
			// stale-if-error: every id the origin failed to answer has a copy.
			for i, r := range l.fallback {
				if r.Object != nil {
					l.results[i] = r
				}
			}
			f.cfg.Metrics.StaleServed("error", l.fallbacks)
		case err != nil:
			return nil, err
		}
		for i, id := range l.ids {
			if r, ok := got[id]; ok {
				l.results[i] = r
			}
		}
	}
	a.Revalidate = l.revalidate
	a.Results = l.results[:0]
	for i, r := range l.results { // in place: each result moves down, never up
		if r.Object != nil {
			a.Results = append(a.Results, r)
		} else {
			a.Missing = append(a.Missing, l.ids[i])
		}
	}
	return a, nil
}

// lookup sorts ids by what the cache holds for them.
func (f *Fetcher) lookup(ids []string) lookup {
	l := lookup{ids: ids, results: make([]Result, len(ids))}
	trusted, beyond := f.trusted()
	for i, id := range ids {
		c, ok := f.cache.Get(id)
		stale, age := c.Stale, c.StaleFor
		if ok && !c.Negative && !trusted {
			stale, age = true, max(age, beyond)
		}
		switch {
		case !ok:
			l.need = append(l.need, id)
		case c.Negative:
		case stale && trusted && age <= f.cfg.StaleWhileRevalidate:
			l.results[i] = Result{Object: c.Object, Status: StatusHit, Stale: true}
			f.cfg.Metrics.StaleServed("revalidate", 1)
			l.revalidate = append(l.revalidate, id)
		case stale:
			l.need = append(l.need, id)
			if age <= f.cfg.StaleIfError {
				if l.fallback == nil {
					l.fallback = make([]Result, len(ids))
				}
				l.fallback[i] = Result{Object: c.Object, Status: StatusHit, Stale: true}
				l.fallbacks++
			}
		case c.Tier == cache.TierPrefetch:
			l.results[i] = Result{Object: c.Object, Status: StatusHitPrefetched}
		default:
			l.results[i] = Result{Object: c.Object, Status: StatusHit}
		}
	}
	return l
}

func dedupe(ids []string) []string {
	if len(ids) == 1 {
		return ids
	}
	seen := make(map[string]struct{}, len(ids))
	out := ids[:0:0]
	for _, id := range ids {
		if _, ok := seen[id]; !ok {
			seen[id] = struct{}{}
			out = append(out, id)
		}
	}
	return out
}
