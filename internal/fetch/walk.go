package fetch

import (
	"context"
	"errors"
	"sync"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// Walk walks the subgraph below roots breadth-first and hands its objects
// to emit level by level, in the plan's order. Every object is demanded:
// cached ones are hits, the rest are fetched a level at a time, or the
// whole remaining subgraph in one Expand round trip when the origin has
// one. While the Expand brings a level, each run of the level's objects at
// its front is emitted as soon as it has arrived (see stream), so a level
// may reach emit in several calls and its objects are sent on while the
// origin still sends the rest. The Expand keeps at most ahead bytes of
// objects for the walk beyond the level the walk is on, plus one message
// (see readAhead); 0 = no bound. It returns the ids that do not exist.
func (f *Fetcher) Walk(ctx context.Context, roots []string, b graph.Budget, ahead int64, emit func(level int, rs []Result) error) (missing []string, err error) {
	w := &walk{f: f, plan: graph.NewPlanIDs(roots, b), budget: b, status: make(map[string]Status), ahead: ahead, emit: emit}
	xctx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); w.xdone.Wait(); w.done() }()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		st, ok := w.step()
		if !ok {
			// The Expand may still be reading its stream's end: let it finish
			// rather than cancel a round trip that succeeded.
			w.done()
			w.xdone.Wait()
			return w.plan.Missing(), nil
		}
		if err := w.level(ctx, xctx, st); err != nil {
			return nil, err
		}
		clear(w.status)
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
	emit   func(level int, rs []Result) error
	x      *Expansion // the walk's Expand, running beside it
	xLevel int        // the plan level of x's roots
	ahead  int64      // bytes x may hold beyond the walk's level; 0 = no bound
	xdone  sync.WaitGroup
}

// level obtains the objects of st and emits them: what its Expand brings
// as it arrives, at the level's front (stream), the rest once the level is
// complete, in the plan's order throughout.
func (w *walk) level(ctx, xctx context.Context, st graph.Step) error {
	w.expand(xctx, st)
	var p front
	var early []*graph.Object // the fetched objects stream emitted
	if w.x != nil && len(st.Fetch) > 0 {
		var err error
		if p, early, err = w.stream(ctx, st); err != nil {
			return err
		}
	}
	fetched, err := w.fetch(ctx, st, st.Fetch[p.fetch:])
	if err != nil {
		return err
	}
	objs := w.plan.Complete(append(early, fetched...))
	if len(objs) == p.objs && p.objs > 0 {
		return nil // all emitted already
	}
	return w.emit(st.Level, w.results(st.Level, objs[p.objs:]))
}

// results are objs, obtained for level, with how each was obtained.
func (w *walk) results(level int, objs []*graph.Object) []Result {
	rs := make([]Result, len(objs))
	for i, o := range objs {
		s, ok := w.status[o.ID]
		if !ok {
			s = StatusMiss
		}
		rs[i] = Result{Object: o, Status: s, Level: level}
	}
	return rs
}

// expand starts the walk's Expand at the first level that needs a fetch,
// when the origin has one and the budget goes deeper: one round trip for
// all that lies below.
func (w *walk) expand(xctx context.Context, st graph.Step) {
	if w.x != nil || len(st.Fetch) == 0 || w.budget.Depth-st.Level <= 0 || !w.f.CanExpand() {
		return
	}
	// Roots another fetch is bringing are left to demand below; held ones
	// are walked through.
	x := w.f.NewExpansion(st.IDs, w.plan.Rest(st, w.budget), false)
	x.async = true
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

// fetch obtains rest, ids of level st that the cache did not hold and the
// walk has not emitted yet: from the walk's Expand once the level is
// complete, and by demand for what it did not bring.
func (w *walk) fetch(ctx context.Context, st graph.Step, rest []string) ([]*graph.Object, error) {
	if len(rest) == 0 {
		return nil, nil
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

// step is the plan's next level. With an Expand under way, the level is
// looked up holding its lock once, not once per id: the Expand takes the
// lock for every message it receives, and a lock changing hands thousands
// of times between the two would make the walk wait at each id.
func (w *walk) step() (graph.Step, bool) {
	if w.x == nil {
		return w.plan.Step(w.have)
	}
	w.x.mu.Lock()
	defer w.x.mu.Unlock()
	return w.plan.Step(w.have)
}

// have tells the plan what is held: what the walk's Expand delivered, or
// the cache's fresh copy (a hit). An id the Expand is still bringing is not
// looked up in the cache: the origin sends it whether cached or not (it was
// not among the known ids), so the walk waits for that copy. The Expand
// records an object before it fills the cache with it, so with its lock
// held (step), a copy in the cache that it brought was seen first. Called
// with w.x.mu held, if w.x is not nil.
func (w *walk) have(id string) (*graph.Object, bool) {
	if w.x != nil {
		if o, known, coming := w.x.lookupLocked(id); known || coming {
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
	if l.Tier == cache.TierPrefetch {
		w.status[id] = StatusHitPrefetched
	} else {
		w.status[id] = StatusHit
	}
	return l.Object, true
}
