package prefetch

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// expansion is one Expand round trip in progress. The origin walks the
// subgraph below the roots and streams it level by level; the expansion
//
//   - fills the cache with every message as it arrives;
//   - registers the ids it expects in the in-flight table, a level ahead
//     (the unseen refs of each object, as the origin's own traversal will
//     schedule them), so that a demand for one of them waits for this
//     round trip instead of starting another (Knafla: a demand read waits
//     for the prefetch in flight);
//   - lets its owner wait for a level, so that GetGraph streams each level
//     while the origin is still sending the next.
//
// A level is complete when a message of a deeper level arrives or the stream
// ends; its claims are released then. Ids claimed but not delivered (the
// origin's budget ran out first) are released as not delivered, and whoever
// waited for them fetches them itself.
type expansion struct {
	e           *Engine
	speculative bool
	budget      graph.Budget
	roots       []string // the roots the Expand asks for: those no other fetch is bringing

	mu sync.Mutex
	// got holds every object received; a speculative expansion keeps only
	// ids and refs, all its plan needs, so that its memory does not grow with
	// the prefetch budget (Oracle's caveat): payloads live in the cache.
	got map[string]*graph.Object
	// held are the whole objects received for ids this expansion claimed,
	// kept until their level is released to whoever waits for them.
	held      map[string]*graph.Object
	owned     map[string]bool  // ids claimed and not yet released
	missing   map[string]bool  // ids the origin said do not exist
	seen      map[string]bool  // ids scheduled: roots and followed refs
	claims    map[int][]*batch // level → in-flight claims not yet released
	level     int              // the level being received; lower ones are complete
	finished  bool
	err       error
	changed   chan struct{} // closed and replaced whenever a level completes
	follow    map[string]bool
	scheduled int
}

// newExpansion claims roots for an Expand with budget b. Roots already in
// flight are not expanded again: they are returned in joins, for the caller
// to wait for, and the Expand (x.run) asks for the others only.
func (e *Engine) newExpansion(roots []string, b graph.Budget, speculative bool) (x *expansion, joins map[*call][]string) {
	x = &expansion{
		e: e, speculative: speculative, budget: b,
		got:     make(map[string]*graph.Object, len(roots)),
		held:    make(map[string]*graph.Object, len(roots)),
		owned:   make(map[string]bool, len(roots)),
		missing: make(map[string]bool),
		seen:    make(map[string]bool, len(roots)),
		claims:  make(map[int][]*batch),
		changed: make(chan struct{}),
	}
	if len(b.Fields) > 0 {
		x.follow = make(map[string]bool, len(b.Fields))
		for _, f := range b.Fields {
			x.follow[f] = true
		}
	}
	x.mu.Lock()
	joins = x.claim(0, roots)
	x.mu.Unlock()
	for _, b := range x.claims[0] {
		x.roots = append(x.roots, b.ids...)
	}
	return x, joins
}

// run performs the Expand call and returns its error; ErrUnsupported means
// the origin cannot expand (remembered by the engine). Every claim is
// released by the time run returns.
func (x *expansion) run(ctx context.Context) error {
	if len(x.roots) == 0 { // all in flight already
		x.finish(nil)
		return nil
	}
	start := time.Now()
	err := x.e.expander.Expand(ctx, x.roots, x.budget, x.receive)
	if errors.Is(err, errors.ErrUnsupported) {
		x.e.noExpand.Store(true)
	} else if err == nil && x.e.observer != nil {
		x.e.observer.ObserveRoundTrip(time.Since(start))
	}
	x.finish(err)
	return err
}

// claim registers ids expected at level that no fetch is bringing yet, and
// returns those another fetch is bringing. The origin schedules at most
// budget.MaxObjects ids, roots included; the expansion stops claiming there
// too. Called with x.mu held.
func (x *expansion) claim(level int, ids []string) (joins map[*call][]string) {
	var fresh []string
	for _, id := range ids {
		if x.seen[id] || (x.budget.MaxObjects > 0 && x.scheduled >= x.budget.MaxObjects) {
			continue
		}
		x.seen[id] = true
		x.scheduled++
		fresh = append(fresh, id)
	}
	if len(fresh) == 0 {
		return nil
	}
	joins, own := x.e.flights.claim(fresh, len(fresh), x.speculative)
	for _, b := range own {
		b.call.partial = true
		for _, id := range b.ids {
			x.owned[id] = true
		}
	}
	x.claims[level] = append(x.claims[level], own...)
	return joins
}

// receive handles one message of the stream: level's objects and missing ids.
// The refs of the objects are claimed before the objects enter the cache, so
// that whoever reads one there and looks below it finds its children in
// flight; level's own claims are released after, at the next level.
func (x *expansion) receive(level int, objs []*graph.Object, missing []string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	for x.level < level {
		x.complete(x.level, nil)
		x.level++
	}
	var next []string
	for _, o := range objs {
		x.got[o.ID] = o
		if x.speculative {
			x.got[o.ID] = &graph.Object{ID: o.ID, Version: o.Version, Refs: o.Refs}
		}
		if x.owned[o.ID] {
			x.held[o.ID] = o
		}
		if level >= x.budget.Depth {
			continue
		}
		for _, r := range o.Refs {
			if x.follow == nil || x.follow[r.Field] {
				next = append(next, r.ID)
			}
		}
	}
	for _, id := range missing {
		x.missing[id] = true
	}
	x.claim(level+1, next)
	x.e.fill(objs, missing, x.speculative)
	return nil
}

// complete releases level's claims with what was delivered (or err) and
// wakes those waiting for the level. Called with x.mu held.
func (x *expansion) complete(level int, err error) {
	for _, b := range x.claims[level] {
		if err != nil {
			b.call.err = err
		} else {
			b.call.objs = make(map[string]*graph.Object, len(b.ids))
			for _, id := range b.ids {
				if o, ok := x.held[id]; ok {
					b.call.objs[id] = o
				}
			}
		}
		for _, id := range b.ids {
			delete(x.held, id)
			delete(x.owned, id)
		}
		x.e.flights.release(b)
	}
	delete(x.claims, level)
	close(x.changed)
	x.changed = make(chan struct{})
}

// finish ends the expansion: the level being received is complete (or
// failed, with everything claimed below it).
func (x *expansion) finish(err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for level := range x.claims {
		x.complete(level, err)
	}
	x.finished, x.err = true, err
	close(x.changed)
	x.changed = make(chan struct{})
}

// await waits until level is complete or the expansion ended, and returns
// the expansion's error if it ended before the level with one.
func (x *expansion) await(ctx context.Context, level int) error {
	for {
		x.mu.Lock()
		done, err, ch := x.finished, x.err, x.changed
		reached := x.level > level
		x.mu.Unlock()
		switch {
		case reached:
			return nil
		case done:
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// lookup says whether the expansion has delivered id, or learned that it does
// not exist (obj nil, known true).
func (x *expansion) lookup(id string) (obj *graph.Object, known bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if o, ok := x.got[id]; ok {
		return o, true
	}
	return nil, x.missing[id]
}

// delivered returns the objects of ids the expansion has received, with the
// ids it has not (nil if all), in the order of ids.
func (x *expansion) delivered(ids []string) (objs []*graph.Object, rest []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	objs = make([]*graph.Object, 0, len(ids))
	for _, id := range ids {
		if o, ok := x.got[id]; ok {
			objs = append(objs, o)
		} else if !x.missing[id] {
			rest = append(rest, id)
		}
	}
	return objs, rest
}
