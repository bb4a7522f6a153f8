package prefetch

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// expand runs one speculative job: walk below its roots through what is
// held and fetch the rest, level by level, until the budget is spent or ctx
// ends.
func (s *Scheduler) expand(ctx context.Context, j job) {
	plan := graph.NewPlan(j.roots, j.budget)
	var xs []*fetch.Expansion // this job's Expand calls: what they brought stays visible to the plan
	var held []*graph.Object  // what the cache held of a step, for Config.Held
	have := func(id string) (*graph.Object, bool) {
		for _, x := range xs {
			if o, known := x.Lookup(id); known {
				return o, true
			}
		}
		o, known := s.fetcher.Peek(id)
		if o != nil {
			held = append(held, o)
		}
		return o, known
	}
	for ctx.Err() == nil {
		st, ok := plan.Step(have)
		if len(held) > 0 {
			s.cfg.Held(ctx, slices.Values(held))
			held = held[:0]
		}
		if !ok {
			if j.capped && plan.Remaining() == 0 {
				s.cfg.Metrics.Clamped() // the tier's cap, not the planner's, ended it
			}
			return
		}
		var fetched []*graph.Object
		if len(st.Fetch) > 0 {
			var x *fetch.Expansion
			var err error
			fetched, x, err = s.fetchLevel(ctx, plan, st, j.budget)
			if err != nil {
				return // origin trouble or shutdown: speculation just stops
			}
			if x != nil {
				xs = append(xs, x)
			}
		}
		plan.Complete(fetched)
	}
}

// fetchLevel fetches a level's ids for a job: with one Expand for the rest
// of the job when the origin has one (below the held objects of the level
// too, which it walks through without sending), level by level otherwise.
func (s *Scheduler) fetchLevel(ctx context.Context, plan *graph.Plan, st graph.Step, b graph.Budget) ([]*graph.Object, *fetch.Expansion, error) {
	if b.Depth-st.Level > 0 && s.fetcher.CanExpand() {
		x, err := s.runExpansion(ctx, st.IDs, plan.Rest(st, b))
		if err == nil {
			fetched, _ := x.Delivered(st.Fetch)
			more, err := x.JoinedRoots(ctx) // roots another fetch was bringing
			return append(fetched, more...), x, err
		}
		if !errors.Is(err, errors.ErrUnsupported) {
			return nil, nil, err
		}
	}
	fetched, err := s.speculate(ctx, st.Fetch)
	return fetched, nil, err
}

// runExpansion runs one speculative Expand below roots in a window slot.
// The slot is taken before the expansion claims its ids, as speculate's
// batches do: a fetch that claimed ids and then waited for a slot could be
// waited on by every holder of one.
func (s *Scheduler) runExpansion(ctx context.Context, roots []string, b graph.Budget) (*fetch.Expansion, error) {
	return s.runIn(ctx, func() *fetch.Expansion { return s.fetcher.NewExpansion(roots, b, true) })
}

// runIn runs the speculative expansion newX makes in a window slot.
func (s *Scheduler) runIn(ctx context.Context, newX func() *fetch.Expansion) (*fetch.Expansion, error) {
	if err := s.win.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.win.release()
	x := newX()
	return x, x.Run(ctx)
}

// speculate fetches ids for a job in batches, each waiting for a window
// slot before it claims its ids, so that a demand never joins a fetch that
// is itself still queued behind speculation.
func (s *Scheduler) speculate(ctx context.Context, ids []string) ([]*graph.Object, error) {
	if len(ids) == 0 { // a chance level with nothing to fetch: no goroutine, no allocation
		return nil, ctx.Err()
	}
	var (
		mu       sync.Mutex
		out      []*graph.Object
		firstErr error
		wg       sync.WaitGroup
	)
	size := s.fetcher.BatchSize()
	for start := 0; start < len(ids); start += size {
		chunk := ids[start:min(start+size, len(ids))]
		wg.Add(1)
		go func() {
			defer wg.Done()
			if s.win.acquire(ctx) != nil {
				return
			}
			defer s.win.release()
			got, err := s.fetcher.Speculate(ctx, chunk)
			mu.Lock()
			out = append(out, got...)
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, firstErr
}
