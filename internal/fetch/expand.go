package fetch

import (
	"context"
	"errors"
	"sync"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// absent stands in Expansion.ids for an id the origin said does not exist.
var absent = &graph.Object{}

// outcome is what Expansion.ids records of an admitted id, its stand-ins
// (nil, absent, released) told apart in one place.
type outcome uint8

const (
	outAwaited  outcome = iota // nothing received yet
	outAbsent                  // the origin said it does not exist
	outReleased                // received, sent on by the walk and let go of (readAhead)
	outHeld                    // received: the object is held
)

// outcomeOf says what o, a value of Expansion.ids, stands for.
func outcomeOf(o *graph.Object) outcome {
	switch o {
	case nil:
		return outAwaited
	case absent:
		return outAbsent
	case released:
		return outReleased
	}
	return outHeld
}

// ErrMalformedExpand is an Expand stream that broke the traversal's rules:
// a level out of order, beyond the requested depth, or objects nobody asked
// for. The stream is cut at once.
var ErrMalformedExpand = errors.New("fetch: malformed expand stream")

// Expansion is one Expand round trip in progress. The origin walks the
// subgraph below the roots and streams it level by level; the expansion
//
//   - fills the cache with every message as it arrives;
//   - registers the ids it expects in the in-flight table, a level ahead
//     (the unseen refs of each object, as the origin's own traversal will
//     schedule them), so that a demand for one of them waits for this
//     round trip instead of starting another (Knafla: a demand read waits
//     for the prefetch in flight);
//   - lets its owner wait for a level, so that GetGraph streams each level
//     while the origin is still sending the next;
//   - tells the origin which objects of the subgraph the cache holds
//     (known_ids): the origin walks through them without sending them, and
//     the expansion follows their refs itself, at the place in the walk the
//     origin does, so both admit the same ids (see expand_known.go).
//
// A level is complete when all its ids have arrived (or were known), when a
// message of a deeper level arrives, or when the stream ends; its claims are
// released then. Ids claimed but not delivered (the
// origin's budget ran out first) are released as not delivered, and whoever
// waited for them fetches them itself.
//
// The request bounds it, not the origin: only objects of ids the walk
// expects (roots and followed refs within depth and max objects) are kept,
// anything else is dropped and counted; a level out of order or beyond the
// depth cuts the stream as malformed; and the stream is cut as soon as every
// expected id has arrived, so an origin that keeps sending costs nothing.
type Expansion struct {
	f           *Fetcher
	speculative bool
	guard       *guard // a speculative expansion's; nil for a demand's
	ride        rides  // which roots in flight it asks for again
	budget      graph.Budget
	since       uint64   // cache.Changes when the expansion began
	roots       []string // the roots the Expand asks for: those no other fetch is bringing
	joins       map[*call][]string

	mu sync.Mutex
	// ids holds the ids scheduled, roots and followed refs, by the
	// traversal's rules, each with what came of it: nil while awaited, the
	// object received, absent for an id the origin said does not exist
	// (or released, see readAhead). One set serves both the rules and the
	// record. A speculative expansion keeps only ids and refs, all its plan
	// needs, so that its memory does not grow with the prefetch budget
	// (Oracle's caveat): payloads live in the cache.
	ids *graph.Ledger
	// owned are the ids a speculative expansion claimed and has not
	// released yet, each with its whole object once received, kept until
	// its level is released to whoever waits for it; a demanded one answers
	// its waiters from ids (delivered).
	owned    map[string]*graph.Object
	claims   map[int][]*batch         // level → in-flight claims not yet released
	known    map[string]*graph.Object // held objects sent as known_ids: the origin walks through them, never sends them
	order    [][]string               // per level, the ids admitted, in the origin's order (below the roots only with known objects)
	left     []int                    // per level, admitted ids neither known, received nor missing
	next     int                      // position in order[level] up to which refs were followed
	level    int                      // the level being received; lower ones are complete
	finished bool
	err      error
	changed  chan struct{} // closed and replaced whenever a level completes, and at every message of a walk's (async)
	dropped  int           // objects received that the walk did not expect
	ahead    *readAhead    // a walk's bound on what it holds for the walk; nil = none
	// async (a walk's expansion) has Run start a settler, which fills the
	// cache and completes levels beside the stream's reader; without one,
	// receive does. deferring is set within record, where completing
	// collects the levels it completes.
	async      bool
	settler    *settler
	deferring  bool
	completing []int
}

// NewExpansion claims roots for an Expand with budget b. Roots another
// Expand is bringing are not expanded again: the caller waits for them with
// JoinedRoots, and the Expand (Run) asks for the others only. So are those
// a BatchGet is bringing for a demanded expansion; a speculative one asks
// for them too, since waiting for the BatchGet would fetch what lies below
// them a round trip later (a navigation that reads faster than the
// speculation its reads schedule would wait twice per Expand). Roots the cache holds are
// walked through, not fetched: a caller passes a whole level, held objects
// included, so that one Expand covers all that lies below it. A speculative
// expansion fills the prefetch tier, a demanded one the main tier.
func (f *Fetcher) NewExpansion(roots []string, b graph.Budget, speculative bool) *Expansion {
	ride := rideNone
	if speculative {
		ride = rideBatchGets
	}
	return f.newExpansion(roots, b, speculative, ride)
}

// NewExpansionAhead is a speculative NewExpansion that asks the origin for
// every root again, those other fetches are bringing too: for speculation
// that must reach further below them than those fetches go, in the same
// round trip rather than one after them. What they bring below the roots
// it brings a second time.
func (f *Fetcher) NewExpansionAhead(roots []string, b graph.Budget) *Expansion {
	return f.newExpansion(roots, b, true, rideAll)
}

func (f *Fetcher) newExpansion(roots []string, b graph.Budget, speculative bool, ride rides) *Expansion {
	n := b.SizeHint(len(roots))
	x := &Expansion{
		f: f, speculative: speculative, ride: ride, budget: b, since: f.cache.Changes(),
		ids:     graph.NewLedger(b, n),
		claims:  make(map[int][]*batch),
		changed: make(chan struct{}),
	}
	if speculative {
		x.guard = &guard{}
		x.owned = make(map[string]*graph.Object, len(roots))
	}
	x.known = f.heldBelow(roots, b)
	if speculative && b.MaxObjects > 0 && len(x.known) > 0 {
		// The origin counts the held objects it walks through against
		// max_objects, and so does the ledger: speculation's budget is
		// what it fetches, as --prefetch-max-objects says, so they are
		// added. Counted in, a job whose roots are a level mostly held
		// (its first Expand brought it) spent its budget on them: W1's
		// trees at 0 ms got 194 objects from an Expand of 845 roots, 806
		// of them held, and took 31 Expands for 7,800 objects.
		x.budget.MaxObjects += len(x.known)
		x.ids = graph.NewLedger(x.budget, n)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.joins = x.claim(0, roots)
	var elsewhere map[string]bool // roots another fetch brings
	for _, ids := range x.joins {
		x.left[0] -= len(ids) // the origin will not bring them
		if elsewhere == nil {
			elsewhere = make(map[string]bool)
		}
		for _, id := range ids {
			elsewhere[id] = true
		}
	}
	for _, id := range x.order[0] {
		if !elsewhere[id] {
			x.roots = append(x.roots, id)
		}
	}
	x.settle()
	return x
}

// JoinedRoots waits for the roots that other fetches were bringing and
// returns those that exist.
func (x *Expansion) JoinedRoots(ctx context.Context) ([]*graph.Object, error) {
	return joined(ctx, x.joins)
}

// Run performs the Expand call and returns its error; one matching
// errors.ErrUnsupported means the origin cannot expand (the fetcher stops
// asking). Every claim is released by the time Run returns. A speculative
// expansion's Expand ends with ctx unless a demand has joined one of its
// claims by then (see guarded).
func (x *Expansion) Run(ctx context.Context) error {
	x.mu.Lock()
	nothing := x.awaited() == 0
	x.mu.Unlock()
	if len(x.roots) == 0 || nothing {
		// All in flight already, or all held as far as the walk goes: the
		// origin has nothing to send.
		x.finish(nil)
		return nil
	}
	if x.speculative {
		var done func()
		ctx, done = x.f.flights.guarded(x.f.cfg.Speculative(ctx), x.guard)
		defer done()
	}
	receive := x.receive
	if x.ahead != nil {
		receive = func(level int, objs []*graph.Object, missing []string) error {
			if err := x.receive(level, objs, missing); err != nil {
				return err
			}
			return x.ahead.pace(ctx, x, level)
		}
	}
	if x.async {
		x.settler = x.startSettler()
	}
	err := x.f.expander.Expand(ctx, x.roots, x.knownList(), x.budget, receive)
	if x.settler != nil {
		x.settler.stop() // all received is in the cache, its levels complete
	}
	if errors.Is(err, graph.ErrStop) {
		err = nil
	}
	if errors.Is(err, errors.ErrUnsupported) {
		x.f.noExpand.Store(true)
	}
	x.finish(err)
	return err
}

// claim registers ids expected at level that no fetch is bringing yet, and
// returns those another fetch is bringing. The origin schedules at most
// budget.MaxObjects ids, roots included; the expansion stops claiming there
// too. Called with x.mu held.
func (x *Expansion) claim(level int, ids []string) (joins map[*call][]string) {
	var fresh []string
	for len(x.order) <= level {
		x.order, x.left = append(x.order, nil), append(x.left, 0)
	}
	for _, id := range ids {
		if !x.ids.Admit(id) {
			continue
		}
		if level == 0 || len(x.known) > 0 {
			// The roots, and where known objects may stand among them the
			// order follow keeps to; otherwise nothing reads it.
			x.order[level] = append(x.order[level], id)
		}
		if x.known[id] != nil {
			continue // held: the origin walks through it, and so does settle
		}
		x.left[level]++
		fresh = append(fresh, id)
	}
	if len(fresh) == 0 {
		return nil
	}
	// Roots in flight that x.ride covers are asked for again rather than
	// joined, as ids below the roots are: the origin sends what lies below
	// them in the same round trip.
	ride := rideNone
	if level == 0 {
		ride = x.ride
	}
	joins, own := x.f.flights.claimExpand(fresh, x.guard, ride)
	for _, b := range own {
		if !x.speculative {
			b.call.delivered = x.delivered
			continue
		}
		for _, id := range b.ids {
			x.owned[id] = nil // claimed, not received yet
		}
	}
	x.claims[level] = append(x.claims[level], own...)
	return joins
}

// expected keeps the objects of objs that the walk scheduled and has not
// received yet; the rest (unrequested, duplicates, beyond the budget) are
// dropped and counted, never cached. Called with x.mu held.
func (x *Expansion) expected(level int, objs []*graph.Object) []*graph.Object {
	kept := objs[:0:0]
	for _, o := range objs {
		if !x.expects(o) {
			x.dropped++
			continue
		}
		x.left[level]--
		kept = append(kept, o)
	}
	if len(kept) < len(objs) {
		x.f.cfg.Metrics.Dropped(len(objs) - len(kept))
	}
	return kept
}

// expects reports whether o was scheduled, neither held (known) nor
// received yet. Called with x.mu held.
func (x *Expansion) expects(o *graph.Object) bool { return o != nil && x.awaits(o.ID) }

// awaits reports whether id was scheduled, neither held (known) nor
// received nor said not to exist yet. Called with x.mu held.
func (x *Expansion) awaits(id string) bool {
	o, admitted := x.ids.Get(id)
	return admitted && o == nil && x.known[id] == nil
}

// complete releases level's claims with what was delivered (or err) and
// wakes those waiting for the level. Called with x.mu held.
func (x *Expansion) complete(level int, err error) {
	for _, b := range x.claims[level] {
		switch {
		case err != nil:
			b.call.err = err
		case x.speculative:
			b.call.objs = make(map[string]*graph.Object, len(b.ids))
			for _, id := range b.ids {
				if o := x.owned[id]; o != nil {
					b.call.objs[id] = o
				}
			}
		}
		if x.speculative {
			for _, id := range b.ids {
				delete(x.owned, id)
			}
		}
		x.f.flights.release(b)
	}
	delete(x.claims, level)
	x.wake()
}

// finish ends the expansion: the level being received is complete (or
// failed, with everything claimed below it).
func (x *Expansion) finish(err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for level := range x.claims {
		x.complete(level, err)
	}
	x.finished, x.err = true, err
	x.wake()
}

// wake wakes those waiting for the expansion to change. Called with x.mu
// held.
func (x *Expansion) wake() {
	close(x.changed)
	x.changed = make(chan struct{})
}

// Await waits until level is complete or the expansion ended, and returns
// the expansion's error if it ended before the level with one.
func (x *Expansion) Await(ctx context.Context, level int) error {
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
