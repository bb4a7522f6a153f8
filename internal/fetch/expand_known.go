package fetch

import (
	"slices"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// lookAhead bounds how far follow searches a level's order for the object
// that arrived: an origin sends a level in order, so the object is normally
// the next id that is neither known nor missing; the bound keeps an origin
// that sends out of order from costing a scan of the level per object.
const lookAhead = 256

// maxKnownIDs bounds the known_ids of an Expand whatever the origin takes:
// what finding them costs (a cache lookup each) and what they add to the
// request (an id each).
const maxKnownIDs = 4096

// knownLimit is how many known_ids an Expand may carry: as many as the
// origin said it takes (its Describe's max_ids, up to maxKnownIDs), else
// BatchSize, since an origin takes at least that many ids per request
// (docs/origin.md).
func (f *Fetcher) knownLimit() int {
	if k, ok := f.expander.(interface{ MaxKnown() int }); ok {
		if m := k.MaxKnown(); m > f.cfg.BatchSize {
			return min(m, maxKnownIDs)
		}
	}
	return f.cfg.BatchSize
}

// heldBelow returns the fresh objects the cache holds in the subgraph below
// roots, roots included, as far as it can be walked through held objects by
// b's rules: the known_ids of an Expand, at most knownLimit of them. None
// when cached copies cannot be trusted to be fresh: the origin must send
// them again then. A held object that lies only below an object not held,
// or beyond the limit, cannot be named to the origin, and may be sent
// again.
func (f *Fetcher) heldBelow(roots []string, b graph.Budget) map[string]*graph.Object {
	if trusted, _ := f.trusted(); !trusted || !slices.ContainsFunc(roots, f.holds) {
		return nil // nothing held, or nothing below a root held to walk through
	}
	limit := f.knownLimit()
	var known map[string]*graph.Object
	t := graph.NewTraversal(roots, b)
	for !t.Done() && len(known) < limit {
		var held []*graph.Object
		for _, id := range t.Pending() {
			o, ok := f.cache.Peek(id)
			if !ok || o == nil || len(known) == limit {
				continue
			}
			if known == nil {
				known = make(map[string]*graph.Object)
			}
			known[id] = o
			held = append(held, o)
		}
		t.Resolve(held)
	}
	return known
}

// holds reports whether the cache holds a fresh copy of id.
func (f *Fetcher) holds(id string) bool {
	o, ok := f.cache.Peek(id)
	return ok && o != nil
}

// knownList is the known objects, for the Expand request.
func (x *Expansion) knownList() []*graph.Object {
	if len(x.known) == 0 {
		return nil
	}
	out := make([]*graph.Object, 0, len(x.known))
	for _, o := range x.known {
		out = append(out, o)
	}
	return out
}

// follow returns next with the refs of o that the walk follows appended:
// after those of the known ids that precede o at level, so that the ids of
// the level below are admitted in the order the origin admits them and the
// same ones fit max_objects. Called with x.mu held.
func (x *Expansion) follow(level int, o *graph.Object, next []string) []string {
	if len(x.known) > 0 {
		ids := x.order[level][x.next:]
		for j, id := range ids[:min(len(ids), lookAhead)] {
			if id == o.ID {
				next = x.followKnown(level, ids[:j], next)
				x.next += j + 1
				break
			}
		}
	}
	return x.refs(level, o, next)
}

// followKnown appends the followed refs of the known objects among ids.
func (x *Expansion) followKnown(level int, ids []string, next []string) []string {
	for _, id := range ids {
		if k := x.known[id]; k != nil {
			next = x.refs(level, k, next)
		}
	}
	return next
}

// refs appends the refs of o, found at level, that the walk follows.
func (x *Expansion) refs(level int, o *graph.Object, next []string) []string {
	if !x.ids.Expands(level) {
		return next
	}
	for _, r := range o.Refs {
		if x.ids.Follows(r.Field) {
			next = append(next, r.ID)
		}
	}
	return next
}

// advance completes the level being received: the refs of its known ids
// not followed yet are claimed a level below, the level's claims released,
// and the next level becomes the one received. Called with x.mu held.
func (x *Expansion) advance() {
	var next []string
	if x.level < len(x.order) {
		next = x.followKnown(x.level, x.order[x.level][x.next:], nil)
	}
	x.claim(x.level+1, next)
	x.levelDone(x.level)
	x.level++
	x.next = 0
}

// settle completes every level whose ids have all arrived or were known,
// without waiting for the next message: the origin sends nothing for a
// level of known ids, and a waiter for a complete level need not wait for
// the one below. Called with x.mu held.
func (x *Expansion) settle() {
	for x.level <= x.budget.Depth && x.level < len(x.left) && x.left[x.level] == 0 {
		x.advance()
	}
}

// awaited is how many ids the walk still expects from the origin.
func (x *Expansion) awaited() int {
	n := 0
	for _, k := range x.left {
		n += k
	}
	return n
}
