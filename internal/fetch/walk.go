package fetch

import (
	"context"
	"errors"
	"sync"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// Walk walks the subgraph below roots breadth-first and hands each level to
// emit as soon as it is complete. Every object is demanded: cached ones are
// hits, the rest are fetched a level at a time, or the whole remaining
// subgraph in one Expand round trip when the origin has one, whose levels
// are emitted as they arrive. The Expand keeps at most ahead bytes of
// objects for the walk beyond the level the walk is on, plus one message
// (see readAhead); 0 = no bound. It returns the ids that do not exist.
func (f *Fetcher) Walk(ctx context.Context, roots []string, b graph.Budget, ahead int64, emit func(level int, rs []Result) error) (missing []string, err error) {
	w := &walk{f: f, plan: graph.NewPlanIDs(roots, b), budget: b, status: make(map[string]Status), ahead: ahead}
	xctx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); w.xdone.Wait(); w.done() }()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		st, ok := w.plan.Step(w.have)
		if !ok {
			// The Expand may still be reading its stream's end: let it finish
			// rather than cancel a round trip that succeeded.
			w.done()
			w.xdone.Wait()
			return w.plan.Missing(), nil
		}
		fetched, err := w.fetch(ctx, xctx, st)
		if err != nil {
			return nil, err
		}
		objs := w.plan.Complete(fetched)
		rs := make([]Result, len(objs))
		for i, o := range objs {
			s, ok := w.status[o.ID]
			if !ok {
				s = StatusMiss
			}
			rs[i] = Result{Object: o, Status: s, Level: st.Level}
		}
		clear(w.status)
		if err := emit(st.Level, rs); err != nil {
			return nil, err
		}
		if w.x != nil && w.x.ahead != nil {
			w.x.ahead.release(w.x, st.Level-w.xLevel, st.IDs)
		}
	}
}

// done tells the walk's Expand that the walk needs nothing more from it:
// whatever it still reads is not held back.
func (w *walk) done() {
	if w.x != nil && w.x.ahead != nil {
		w.x.ahead.close(w.x)
	}
}

// walk is the state of one Walk.
type walk struct {
	f      *Fetcher
	plan   *graph.Plan
	budget graph.Budget
	status map[string]Status // how the current level's objects were obtained
	x      *Expansion        // the walk's Expand, running beside it
	xLevel int               // the plan level of x's roots
	ahead  int64             // bytes x may hold beyond the walk's level; 0 = no bound
	xdone  sync.WaitGroup
}

// fetch obtains the ids of level st that the cache did not hold: from the
// walk's Expand (started at the first level that needs one), and by demand
// for what it did not bring.
func (w *walk) fetch(ctx, xctx context.Context, st graph.Step) ([]*graph.Object, error) {
	rest := st.Fetch
	if len(rest) == 0 {
		return nil, nil
	}
	if w.x == nil && w.budget.Depth-st.Level > 0 && w.f.CanExpand() {
		// Roots another fetch is bringing are left to demand below; held
		// ones are walked through.
		x := w.f.NewExpansion(st.IDs, w.plan.Rest(st, w.budget), false)
		if w.ahead > 0 {
			x.ahead = &readAhead{limit: w.ahead, room: make(chan struct{})}
		}
		w.x, w.xLevel = x, st.Level
		w.xdone.Add(1)
		go func() {
			defer w.xdone.Done()
			_ = x.Run(xctx) // its error reaches the walk through Await
		}()
	}
	var fetched []*graph.Object
	if w.x != nil {
		switch err := w.x.Await(ctx, st.Level-w.xLevel); {
		case errors.Is(err, errors.ErrUnsupported):
			w.x = nil
		case err != nil:
			return nil, err
		default:
			fetched, rest = w.x.Delivered(rest)
		}
	}
	if len(rest) > 0 { // beyond the Expand's budget, or no Expand
		got, err := w.f.demand(ctx, rest)
		if err != nil {
			return nil, err
		}
		for id, r := range got {
			w.status[id] = r.Status
			fetched = append(fetched, r.Object)
		}
	}
	return fetched, nil
}

// have tells the plan what is held: what the walk's Expand delivered, or
// the cache's fresh copy (a hit). An id the Expand is still bringing is not
// looked up in the cache: the origin sends it whether cached or not (it was
// not among the known ids), so the walk waits for that copy.
func (w *walk) have(id string) (*graph.Object, bool) {
	if w.x != nil {
		if o, known, coming := w.x.lookup(id); known || coming {
			return o, known
		}
	}
	l, ok := w.f.cache.Get(id)
	if !ok {
		return nil, false
	}
	if l.Negative {
		return nil, true
	}
	if trusted, _ := w.f.trusted(); l.Stale || !trusted {
		return nil, false // a walk is answered fresh: refetch
	}
	if w.x != nil {
		// The Expand may have delivered id between the first look and the
		// cache's answer: it records an object before filling the cache
		// with it, so asking again tells its own fetch (a miss of this
		// request) from a hit.
		if o, known := w.x.Lookup(id); known {
			return o, true
		}
	}
	if l.Tier == cache.TierPrefetch {
		w.status[id] = StatusHitPrefetched
	} else {
		w.status[id] = StatusHit
	}
	return l.Object, true
}
