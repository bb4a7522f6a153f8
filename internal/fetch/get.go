package fetch

import (
	"context"

	"github.com/lookahead-dev/lookahead/internal/cache"
)

// lookup is what the cache answered for the ids of one request.
type lookup struct {
	byID       map[string]Result
	need       []string          // to fetch now
	revalidate []string          // answered stale, to refetch in the background
	fallback   map[string]Result // stale copies to answer if the origin fails
}

// Get answers ids from the cache and fetches all misses of the request at
// once, in one round trip per BatchSize ids (fewer when other requests'
// misses gather with them), once its admission lets them (see
// SetAdmission). Cached copies past their TTL follow the stale rules of
// Config.
func (f *Fetcher) Get(ctx context.Context, ids []string) (*Answer, error) {
	a := &Answer{}
	ids = dedupe(ids)
	l := f.lookup(ids)
	if len(l.need) > 0 {
		release, err := f.admit(ctx)
		if err != nil {
			return nil, err
		}
		got, err := f.demand(ctx, l.need)
		release()
		switch {
		case err != nil && len(l.fallback) == len(l.need) && ctx.Err() == nil:
			// stale-if-error: every id the origin failed to answer has a copy.
			for id, r := range l.fallback {
				l.byID[id] = r
			}
			f.cfg.Metrics.StaleServed("error", len(l.fallback))
		case err != nil:
			return nil, err
		}
		for id, r := range got {
			l.byID[id] = r
		}
	}
	a.Revalidate = l.revalidate
	a.Results = make([]Result, 0, len(l.byID))
	for _, id := range ids {
		if r, ok := l.byID[id]; ok {
			a.Results = append(a.Results, r)
		} else {
			a.Missing = append(a.Missing, id)
		}
	}
	return a, nil
}

// lookup sorts ids by what the cache holds for them.
func (f *Fetcher) lookup(ids []string) lookup {
	l := lookup{byID: make(map[string]Result, len(ids))}
	trusted, beyond := f.trusted()
	for _, id := range ids {
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
			l.byID[id] = Result{Object: c.Object, Status: StatusHit, Stale: true}
			f.cfg.Metrics.StaleServed("revalidate", 1)
			l.revalidate = append(l.revalidate, id)
		case stale:
			l.need = append(l.need, id)
			if age <= f.cfg.StaleIfError {
				if l.fallback == nil {
					l.fallback = make(map[string]Result)
				}
				l.fallback[id] = Result{Object: c.Object, Status: StatusHit, Stale: true}
			}
		case c.Tier == cache.TierPrefetch:
			l.byID[id] = Result{Object: c.Object, Status: StatusHitPrefetched}
		default:
			l.byID[id] = Result{Object: c.Object, Status: StatusHit}
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
