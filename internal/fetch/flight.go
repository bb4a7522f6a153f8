package fetch

import (
	"sync"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// call is one origin fetch of a batch of ids. Its result fields are written
// once, before done is closed, and only read after.
type call struct {
	done        chan struct{}
	speculative bool
	guard       *guard // a speculative call's: whether it may still be cancelled
	// partial: an id absent from objs was not delivered (an Expand's budget
	// ran out), rather than found not to exist; its waiters fetch it. Set
	// before the call is in the flights table, read under flights.mu or
	// once done is closed.
	partial bool
	objs    map[string]*graph.Object
	// delivered, when set, answers for objs: a demanded expansion's own
	// record of what it received, rather than a copy of it per batch.
	delivered func(id string) (*graph.Object, bool)
	// older names objs older than a version the origin had announced:
	// delivered, but not fresh (see Fetcher.recheckOlder).
	older map[string]bool
	err   error
}

// object returns what the call delivered for id, once done is closed.
func (c *call) object(id string) (*graph.Object, bool) {
	if c.delivered != nil {
		return c.delivered(id)
	}
	o, ok := c.objs[id]
	return o, ok
}

func newCall(speculative bool) *call {
	return &call{done: make(chan struct{}), speculative: speculative}
}

// newGuarded is a call of the speculative fetch g guards, or, with g nil, a
// demand's call.
func newGuarded(g *guard) *call {
	c := newCall(g != nil)
	c.guard = g
	return c
}

// batch is a call and the ids it fetches.
type batch struct {
	ids  []string
	call *call
	// gathering: the batch waits for a demand slot and takes in the misses
	// of other demands until it has one (see flights.claimDemand).
	gathering bool
}

// flights is the table of ids being fetched: Knafla's prefetch list and
// groupcache's singleflight, per id rather than per key, because one origin
// BatchGet carries many ids and a later request may need any subset of them.
//
// It also batches demand across requests, DataLoader's idea without its
// timer: demand batches in flight at once are limited to slots; a miss that
// finds them all busy joins the one gathering batch, which leaves as soon as
// a slot frees with every miss that arrived meanwhile (up to batchSize). A
// lone miss with a free slot leaves at once, so nothing waits for a clock.
type flights struct {
	batchSize int
	slots     chan struct{} // one token per demand batch in flight

	mu        sync.Mutex
	calls     map[string]*call // id → the fetch that will deliver it; guarded by mu
	gathering *batch           // the demand batch waiting for a slot; guarded by mu
}

func newFlights(batchSize, slots int) *flights {
	return &flights{batchSize: batchSize, slots: make(chan struct{}, slots), calls: make(map[string]*call)}
}

// claim splits ids into those already in flight (grouped by the call that
// will deliver them) and new batches of at most batchSize ids that the
// caller now owns and must finish with release. Speculative claims (g
// guards their fetch) use it; the caller holds whatever limits its
// concurrency.
func (f *flights) claim(ids []string, batchSize int, g *guard) (joins map[*call][]string, own []*batch) {
	return f.claimAll(ids, batchSize, g, false, rideNone)
}

// rides says which ids in flight an Expand asks the origin for again
// rather than join the fetch bringing them.
type rides int

const (
	rideNone rides = iota
	// rideBatchGets: ids a plain BatchGet brings. It brings nothing below
	// them, so that joining it would fetch what lies below a round trip
	// later, after it returns; an Expand bringing them brings that too.
	rideBatchGets
	// rideAll: every id in flight, for an Expand that must reach further
	// below them than the fetch bringing them goes (see NewExpansionAhead).
	rideAll
)

// claimExpand is claim for the ids an Expand expects at one level (g nil
// for a demand's), in one batch. Its calls are partial: an id the Expand's
// budget did not reach is not delivered. Ids in flight that ride covers are
// neither joined nor claimed: the Expand asks the origin for them as well.
func (f *flights) claimExpand(ids []string, g *guard, ride rides) (joins map[*call][]string, own []*batch) {
	return f.claimAll(ids, len(ids), g, true, ride)
}

// claimAll is claim and claimExpand: partial marks the new calls as an
// Expand's before another claim can find them (call.partial is read under
// mu), ride leaves the ids in flight it covers to the caller.
func (f *flights) claimAll(ids []string, batchSize int, g *guard, partial bool, ride rides) (joins map[*call][]string, own []*batch) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var cur *batch
	for _, id := range ids {
		if c, ok := f.calls[id]; ok && c.joinable() {
			if ride == rideAll || ride == rideBatchGets && !c.partial {
				continue
			}
			if g == nil {
				c.demand()
			}
			joins = addJoin(joins, c, id)
			continue
		}
		if cur == nil || len(cur.ids) == batchSize {
			cur = &batch{call: newGuarded(g)}
			cur.call.partial = partial
			own = append(own, cur)
		}
		cur.ids = append(cur.ids, id)
		f.calls[id] = cur.call
	}
	return joins, own
}

// claimDemand is claim for a demand. Ids not in flight go, in this order,
// into the gathering batch while it has room (joined: its owner sends it),
// into batches that hold a demand slot and leave at once, or, when every
// slot is busy, into a new gathering batch the caller owns. An owned
// gathering batch must be sent with send, which waits for its slot.
func (f *flights) claimDemand(ids []string) (joins map[*call][]string, own []*batch) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var cur *batch
	for _, id := range ids {
		if c, ok := f.calls[id]; ok && c.joinable() {
			c.demand()
			joins = addJoin(joins, c, id)
			continue
		}
		if g := f.gathering; g != nil && len(g.ids) < f.batchSize {
			g.ids = append(g.ids, id)
			f.calls[id] = g.call
			if !owns(own, g) {
				joins = addJoin(joins, g.call, id)
			}
			continue
		}
		if cur == nil || len(cur.ids) == f.batchSize {
			cur = &batch{call: newCall(false)}
			select {
			case f.slots <- struct{}{}:
			default: // every slot busy: gather
				cur.gathering = true
				f.gathering = cur
			}
			own = append(own, cur)
		}
		cur.ids = append(cur.ids, id)
		f.calls[id] = cur.call
	}
	return joins, own
}

func owns(own []*batch, b *batch) bool {
	for _, o := range own {
		if o == b {
			return true
		}
	}
	return false
}

func addJoin(joins map[*call][]string, c *call, id string) map[*call][]string {
	if joins == nil {
		joins = make(map[*call][]string)
	}
	joins[c] = append(joins[c], id)
	return joins
}

// seal waits for a gathering batch's slot and closes it to new ids; it
// reports false if done ended first, and then the batch is closed but
// holds no slot. A batch that left at once is sealed already.
func (f *flights) seal(b *batch, done <-chan struct{}) bool {
	if !b.gathering {
		return true
	}
	ok := true
	select {
	case f.slots <- struct{}{}:
	case <-done:
		ok = false
	}
	f.mu.Lock()
	if f.gathering == b {
		f.gathering = nil
	}
	b.gathering = false
	f.mu.Unlock()
	return ok
}

// freeSlot returns the demand slot of a sent batch.
func (f *flights) freeSlot() { <-f.slots }

// release removes a finished batch from the table and wakes its joiners. The
// caller fills the cache before release, so that a request arriving after
// release finds the objects cached rather than fetching them again.
func (f *flights) release(b *batch) {
	f.mu.Lock()
	for _, id := range b.ids {
		if f.calls[id] == b.call {
			delete(f.calls, id)
		}
	}
	f.mu.Unlock()
	close(b.call.done)
}

// forget detaches id from the fetch in flight for it, if any: that fetch
// still answers those already waiting, but a later request starts its own.
// For changes: a fetch that began before a change may carry the old version.
func (f *flights) forget(id string) {
	f.mu.Lock()
	delete(f.calls, id)
	f.mu.Unlock()
}

// forgetAll detaches every fetch in flight, for a cache that was cleared.
func (f *flights) forgetAll() {
	f.mu.Lock()
	clear(f.calls)
	f.mu.Unlock()
}
