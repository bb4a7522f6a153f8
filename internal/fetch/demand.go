package fetch

import (
	"context"
	"sync"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// Fetch fetches ids as a demand, joining fetches already in flight, and
// fills the cache as demanded: for work an application waits on, or a
// refresh of stale copies. It returns what exists of ids.
func (f *Fetcher) Fetch(ctx context.Context, ids []string) ([]*graph.Object, error) {
	got, err := f.demand(ctx, dedupe(ids))
	if err != nil {
		return nil, err
	}
	out := make([]*graph.Object, 0, len(got))
	for _, r := range got {
		out = append(out, r.Object)
	}
	return out, nil
}

// demand fetches ids an application is waiting for, on the caller's context.
// A fetch it joined that failed or did not bring an id (perhaps only because
// its owner gave up; ours may still succeed) is tried again: once through
// the table, since another fetch may have claimed the id meanwhile, then
// regardless of it, so that retries end.
func (f *Fetcher) demand(ctx context.Context, ids []string) (map[string]Result, error) {
	out := make(map[string]Result, len(ids))
	retry := ids
	for round := 0; round < 2 && len(retry) > 0; round++ {
		joins, own := f.flights.claimDemand(retry)
		f.countJoins(joins)
		if round == 0 {
			f.tellCaughtUp(ctx, retry, joins)
		}
		f.sendAll(ctx, own)
		if err := collect(own, out); err != nil {
			return nil, err
		}
		var err error
		if retry, err = f.awaitJoins(ctx, joins, out); err != nil {
			return nil, err
		}
	}
	if len(retry) > 0 {
		b := &batch{ids: retry, call: newCall(false)}
		f.run(ctx, b, false)
		if err := collect([]*batch{b}, out); err != nil {
			return nil, err
		}
	}
	return out, f.recheckOlder(ctx, out)
}

// sendAll sends a demand's own batches, in parallel when there are several.
func (f *Fetcher) sendAll(ctx context.Context, own []*batch) {
	if len(own) == 1 {
		f.send(ctx, own[0])
		return
	}
	var wg sync.WaitGroup
	for _, b := range own {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.send(ctx, b)
		}()
	}
	wg.Wait()
}

// send runs one demand batch in its slot: a gathering batch first waits for
// one, taking in the misses of other requests meanwhile.
func (f *Fetcher) send(ctx context.Context, b *batch) {
	if !f.flights.seal(b, ctx.Done()) {
		b.call.err = ctx.Err()
		f.flights.release(b)
		return
	}
	defer f.flights.freeSlot()
	f.run(ctx, b, false)
}

// tellCaughtUp tells OnCaughtUp's function of the ids of a demand for ids
// that speculative fetches were bringing (joins) or that no fetch was
// bringing, if any; not of those another demand was bringing.
func (f *Fetcher) tellCaughtUp(ctx context.Context, ids []string, joins map[*call][]string) {
	fn := f.caughtUp.Load()
	if fn == nil {
		return
	}
	var byDemand map[string]bool // ids another demand is bringing
	for c, js := range joins {
		if c.speculative {
			continue
		}
		if byDemand == nil {
			byDemand = make(map[string]bool, len(js))
		}
		for _, id := range js {
			byDemand[id] = true
		}
	}
	tell := make([]string, 0, len(ids))
	for _, id := range ids {
		if !byDemand[id] {
			tell = append(tell, id)
		}
	}
	if len(tell) > 0 {
		(*fn)(ctx, tell)
	}
}

// countJoins counts a demand's ids that wait for fetches already in flight,
// on arrival; a prefetch that a demand reached in flight was late.
func (f *Fetcher) countJoins(joins map[*call][]string) {
	for c, ids := range joins {
		f.cfg.Metrics.Joined(len(ids), c.speculative)
	}
}

// collect puts what a demand's own batches fetched into out, or returns the
// first batch's error.
func collect(own []*batch, out map[string]Result) error {
	for _, b := range own {
		if b.call.err != nil {
			return b.call.err
		}
		for id, o := range b.call.objs {
			out[id] = Result{Object: o, Status: StatusMiss, Stale: b.call.older[id]}
		}
	}
	return nil
}

// awaitJoins waits for the fetches a demand joined and puts what they
// brought into out. It returns the ids to fetch again: all of a fetch that
// failed, and those a partial one did not bring.
func (f *Fetcher) awaitJoins(ctx context.Context, joins map[*call][]string, out map[string]Result) (retry []string, err error) {
	for c, ids := range joins {
		select {
		case <-c.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if c.err != nil {
			retry = append(retry, ids...)
			continue
		}
		for _, id := range ids {
			o, ok := c.object(id)
			if !ok {
				if c.partial {
					retry = append(retry, id)
				}
				continue
			}
			if c.speculative {
				f.cache.Promote(id)
			}
			out[id] = Result{Object: o, Status: StatusJoined, Stale: c.older[id], Speculative: c.speculative}
		}
	}
	return retry, nil
}

// Speculate fetches ids for a prefetch: claims them, fetches what is not in
// flight in batches, and waits for the rest. The caller holds the worker
// slot that bounds speculation, so that a demand never joins a fetch that
// is itself still queued behind speculation. Ending ctx cancels its origin
// calls, unless a demand has joined one of them (see guarded).
func (f *Fetcher) Speculate(ctx context.Context, ids []string) ([]*graph.Object, error) {
	g := &guard{}
	joins, own := f.flights.claim(ids, f.cfg.BatchSize, g)
	calls, done := f.flights.guarded(f.cfg.Speculative(ctx), g)
	defer done()
	var out []*graph.Object
	var firstErr error
	for _, b := range own {
		f.run(calls, b, true)
		if b.call.err != nil && firstErr == nil {
			firstErr = b.call.err
		}
		for _, o := range b.call.objs {
			out = append(out, o)
		}
	}
	more, err := joined(ctx, joins)
	if err != nil {
		return nil, err
	}
	return append(out, more...), firstErr
}

// joined waits for the fetches in flight that joins names and returns what
// they brought of the ids each was joined for.
func joined(ctx context.Context, joins map[*call][]string) ([]*graph.Object, error) {
	var out []*graph.Object
	for c, ids := range joins {
		select {
		case <-c.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		for _, id := range ids {
			if o, ok := c.object(id); ok {
				out = append(out, o)
			}
		}
	}
	return out, nil
}

// run performs one owned batch: ids cached since they were claimed are taken
// from the cache (a fetch that finished just before our claim filled it, see
// flights.release), the rest cost one origin round trip. The cache is filled
// before the batch is released.
func (f *Fetcher) run(ctx context.Context, b *batch, speculative bool) {
	c := b.call
	c.objs = make(map[string]*graph.Object, len(b.ids))
	var ask []string
	trusted, _ := f.trusted()
	for _, id := range b.ids {
		o, known := f.cache.Peek(id)
		switch {
		case !trusted || !known:
			ask = append(ask, id)
		case o != nil:
			c.objs[id] = o
		} // known not to exist: absent from objs, as the origin would answer
	}
	if len(ask) > 0 {
		since := f.cache.Changes() // before the request leaves: see cache.FillDemand
		found, missing, err := f.origin.BatchGet(ctx, ask)
		if err == nil {
			c.older = f.fill(found, missing, fillOf(speculative), since)
			for _, o := range found {
				c.objs[o.ID] = o
			}
		}
		c.err = err
	}
	f.flights.release(b)
}

// fillTo says where a fill stores what the origin sent.
type fillTo uint8

const (
	toMain     fillTo = iota // a demand's: the main tier
	toPrefetch               // speculation's: the prefetch tier
	toWalk                   // a walk's Expand's: the prefetch tier, as demanded (cache.FillWalked)
)

// fillOf is where a fetch, speculative or not, stores what it brings.
func fillOf(speculative bool) fillTo {
	if speculative {
		return toPrefetch
	}
	return toMain
}

// fill stores what the origin sent for a fetch that began at since where
// to says and counts it by reason. It returns the ids of objects older than
// a version the origin had announced, which the cache refused.
func (f *Fetcher) fill(objs []*graph.Object, missing []string, to fillTo, since uint64) (older map[string]bool) {
	var n int64
	for _, o := range objs {
		n += o.Size()
	}
	f.cfg.Metrics.Fetched(to == toPrefetch, len(objs), n)
	f.fetchedObjects.Add(int64(len(objs)))
	f.fetchedBytes.Add(n)
	var old []string
	switch to {
	case toPrefetch:
		old = f.cache.FillPrefetched(since, objs...)
	case toWalk:
		old = f.cache.FillWalked(since, objs...)
	default:
		old = f.cache.FillDemand(since, objs...)
	}
	f.cache.FillMissing(since, missing...)
	if len(old) == 0 {
		return nil
	}
	older = make(map[string]bool, len(old))
	for _, id := range old {
		older[id] = true
	}
	return older
}
