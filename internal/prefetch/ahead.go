package prefetch

import (
	"context"
	"sync"

	"github.com/lookahead-dev/lookahead/internal/fetch"
)

// CaughtUp is told (fetch.Fetcher.OnCaughtUp) of ids a demand of ctx found
// speculative fetches bringing, or no fetch bringing, before it waits for
// them: the application has caught up with speculation, or overtaken it. The job a read schedules expands the
// planner's depth below what was read, and starts once the read is
// answered; an application that reads faster than a round trip per that
// many levels (a navigation with no think time, whose reads of prefetched
// objects a near cache answers in microseconds) reaches the last level
// before the next job has fetched below it, and waits a round trip per
// depth's worth of levels. So at once, in the same round trip as the fetch
// the demand waits for, static speculation expands twice its depth below
// those ids: the levels the fetch in flight brings, and as many again
// beyond them (Knafla's distance: a round trip's worth of levels in flight
// ahead of the last level fetched, not of the last level read). The roots
// are asked for again (fetch.NewExpansionAhead), with what the fetch in
// flight brings below them; for a miss, beside the demand's own fetch of
// them, so that what lies below comes in the same round trip rather than
// in a job that starts once the miss is answered (a round trip later). The chooser plans its own distance ahead
// (Chooser.Ahead); it is not told. The sidecar tells it of near-cache
// subscribers' demands only (server.NearReaders).
func (s *Scheduler) CaughtUp(ctx context.Context, ids []string) {
	if s.chooser != nil || s.cfg.Mode != ModeStatic || len(ids) == 0 {
		return
	}
	r, _ := ctx.Value(requestKey{}).(*request)
	var h Hint
	if r != nil {
		h = r.hint
	}
	b := s.planner.Budget(nil, h)
	if b.Depth <= 0 {
		return
	}
	ids = dedupe(ids)
	switch {
	case r == nil:
		b.Depth *= 2
	case b.MaxObjects > 0:
		b.MaxObjects += len(ids) // the hint counts objects below them; the origin counts them too
	}
	b, _ = s.capBudget(b)
	s.enqueue(job{ahead: ids, budget: b, client: ClientOf(ctx)})
	if r != nil {
		r.mu.Lock()
		r.ahead = append(r.ahead, ids...)
		r.mu.Unlock()
	}
}

// request is what CaughtUp and After share of one request with a prefetch
// hint (WithHint).
type request struct {
	hint  Hint
	mu    sync.Mutex
	ahead []string // ids CaughtUp expanded the hint's budget below
}

type requestKey struct{}

// WithHint returns ctx carrying the prefetch hint of the request it
// answers, for CaughtUp: a demand whose request says how far to prefetch
// below it (a query's roots, with the depth of its trees) is expanded that
// far in the same round trip as its own fetch, with the request's budget
// rather than twice the planner's own, and After does not expand below
// those ids again once the request is answered. With the planner's budget
// that Expand brought only part of the levels the request's own job
// wants, and the two split the rest between more Expands (W1's near-cache
// row: 8 to 10 Expands and 8,200 to 9,800 objects fetched for 7,800); with
// the hint's budget but both jobs, the request's job asked the origin
// again for all that the first was bringing (each object twice).
func WithHint(ctx context.Context, h Hint) context.Context {
	return context.WithValue(ctx, requestKey{}, &request{hint: h})
}

// expandedAhead reports the ids of ctx's request that CaughtUp expanded
// below with its hint, if any.
func expandedAhead(ctx context.Context) map[string]bool {
	r, _ := ctx.Value(requestKey{}).(*request)
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ahead) == 0 {
		return nil
	}
	m := make(map[string]bool, len(r.ahead))
	for _, id := range r.ahead {
		m[id] = true
	}
	return m
}

// expandAhead runs a job of CaughtUp: one Expand below its ids, when the
// origin has one.
func (s *Scheduler) expandAhead(ctx context.Context, j job) {
	if !s.fetcher.CanExpand() {
		return
	}
	_, _ = s.runIn(ctx, func() *fetch.Expansion { return s.fetcher.NewExpansionAhead(j.ahead, j.budget) })
}
