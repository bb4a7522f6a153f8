package prefetch

import (
	"context"

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
	b := s.planner.Budget(nil, Hint{})
	if b.Depth <= 0 {
		return
	}
	b.Depth *= 2
	b, _ = s.capBudget(b)
	s.enqueue(job{ahead: dedupe(ids), budget: b, client: ClientOf(ctx)})
}

// expandAhead runs a job of CaughtUp: one Expand below its ids, when the
// origin has one.
func (s *Scheduler) expandAhead(ctx context.Context, j job) {
	if !s.fetcher.CanExpand() {
		return
	}
	_, _ = s.runIn(ctx, func() *fetch.Expansion { return s.fetcher.NewExpansionAhead(j.ahead, j.budget) })
}
