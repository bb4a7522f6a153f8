package prefetch

import (
	"slices"
	"unsafe"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// Chances implements Chooser: the probability of each ref of o being read,
// given that o is read at depth, in ref order; refs beyond what
// applications were seen to read from one list (unless o's list is being
// read, see listChances.beyond), and refs of a field nothing is known
// about, get 0.
//
// The refs of a list none of whose refs can reach least get 0 without an
// estimate each: the walk of a level of friends of friends, hundreds of
// refs each, whose lists nobody reads, costs a dozen estimates a list.
func (l *Learned) Chances(o *graph.Object, depth int, least float64, out []float64) []float64 {
	out = out[:0]
	l.mu.RLock()
	defer l.mu.RUnlock()
	var fields [4]listChances // one per field: objects have few
	lists := fields[:0]
	var index fieldIndex
	out = slices.Grow(out, len(o.Refs))[:len(o.Refs)]
	clear(out) // a hub's refs past what is read of it are left at 0
	i := -1    // the list of the ref before: a field's refs usually come together
	for k := 0; k < len(o.Refs); k++ {
		r := &o.Refs[k]
		if i < 0 || !same(lists[i].field, r.Field) {
			if i = index.find(r.Field); i < 0 && len(lists) == maxLists {
				k = runEnd(o.Refs, k) - 1 // a field past maxLists: chance 0
				continue
			} else if i < 0 {
				i = index.add(r.Field)
				lists = append(lists, l.listLocked(edgeKey{min(depth, maxContextDepth), o.Type, r.Field}))
				l.readingLocked(&lists[i], o.ID)
				if c := &lists[i]; least > 0 && c.own == 0 && c.s != nil && c.most() < least {
					c.s = nil // done: every ref 0
				}
			}
		}
		c := &lists[i]
		if c.done() {
			k = runEnd(o.Refs, k) - 1 // the rest of this run of the field is 0 too
			continue
		}
		out[k] = c.next(c.counts() && l.skippedLocked(o.ID, r.ID))
	}
	return out
}

// same reports whether a and b are equal, without a call to compare their
// bytes when they are the same string: a decoded object's refs share their
// field's (graphpb.Decode).
func same(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

// fieldIndex is a set of fields in the order added, each with its index
// (which of an object's lists a field is, say): a scan of them while they
// are few, a map once they are more than fieldIndexScan, so that objects
// whose refs make up fields as they go cost each field a lookup, not a
// scan.
type fieldIndex struct {
	fields []string
	m      map[string]int
}

// fieldIndexScan is how many fields a fieldIndex scans before it keeps a
// map: objects have a few.
const fieldIndexScan = 16

func (x *fieldIndex) has(f string) bool { return x.find(f) >= 0 }

// reset empties x, keeping its slice.
func (x *fieldIndex) reset() { x.fields, x.m = x.fields[:0], nil }

// find returns f's index, -1 if it was not added.
func (x *fieldIndex) find(f string) int {
	if x.m != nil {
		if i, ok := x.m[f]; ok {
			return i
		}
		return -1
	}
	return slices.Index(x.fields, f)
}

// add adds f, not added yet, and returns its index.
func (x *fieldIndex) add(f string) int {
	x.fields = append(x.fields, f)
	switch {
	case x.m != nil:
		x.m[f] = len(x.fields) - 1
	case len(x.fields) > fieldIndexScan:
		x.m = make(map[string]int, 2*len(x.fields))
		for i, g := range x.fields {
			x.m[g] = i
		}
	}
	return len(x.fields) - 1
}

// runEnd returns the index past the run of refs of refs[k]'s field that
// starts at k: a hub's thousands of refs past what can be read of it are
// passed by with one comparison each.
func runEnd(refs []graph.Ref, k int) int {
	j := k + 1
	for j < len(refs) && same(refs[j].Field, refs[k].Field) {
		j++
	}
	return j
}

// Followed implements Chooser: the fields some position of which has a
// chance of at least threshold (estimate, as Chances gives it).
func (l *Learned) Followed(threshold float64) []string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []string
	for k, s := range l.stats {
		if slices.Contains(out, k.field) {
			continue
		}
		prior := (s.allFollowed + priorWeight*l.cfg.Prior) / (s.allOffered + priorWeight)
		for b := range buckets {
			if estimate(s, prior, b, l.cfg.Threshold) >= threshold {
				out = append(out, k.field)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// skippedLocked reports whether a reader of parent's list skips id: it was
// read already in this walk, and not from that list. How far down a list
// the application reads counts the others only: a friend's friends list
// starts with the user and the friends read before it.
func (l *Learned) skippedLocked(parent, id string) bool {
	from, read := l.walk[id]
	return read && from != parent
}

// listChances gives the chances of one list's refs in order.
type listChances struct {
	field  string
	key    edgeKey
	s      *fieldStats // nil: nothing known
	prior  float64     // the field's estimate
	likely float64     // Threshold: a chance below it needs evidence (minEvidence)
	run    int         // the longest run read from one list
	pos    int         // of the next ref
	rank   int         // of the next ref, among those not read in the walk
	own    int         // refs followed from this list: 0 when it is not being read
	last   int         // of the furthest ref followed from this list, when own > 0
	reach  float64     // the field's chance of a list being read to last; 0: too few follows there to say (see at)
	whole  bool        // lists of the field are read to their end (readsToEndLocked)
	due    int         // reads the application makes in two round trips
}

// readingLocked tells c of the list of parent it is, when the application
// is reading it (see beyond).
func (l *Learned) readingLocked(c *listChances, parent string) {
	run := l.lists[listKey{parent, c.field}]
	if run == nil || c.s == nil {
		return
	}
	c.own, c.last = run.followed, run.last
	if b := bucket(run.last); c.s.followed[b] >= minEvidence {
		c.reach = rate(c.s, c.prior, b)
	}
	c.whole = l.readsToEndLocked(c.key)
	c.due = 2 * l.pace.distance(l.rtt)
}

// minAhead is the last position a list with a follow is fetched to.
const minAhead = 4

// priorWeight is how many observations the level above counts for.
const priorWeight = 2

func (l *Learned) listLocked(k edgeKey) listChances {
	c := listChances{field: k.field, key: k, s: l.stats[k], prior: l.cfg.Prior, likely: l.cfg.Threshold}
	if c.s == nil {
		c.s = l.treeLikeLocked(k)
	}
	if c.s == nil && k.depth > 0 {
		// A field with no evidence at this depth borrows the level above's
		// when a list there was read to its end and never back: friends of
		// friends are read as the friends were, until this level's own
		// evidence (a list passed by, say) tells otherwise.
		if up := l.stats[edgeKey{k.depth - 1, k.typ, k.field}]; up != nil && up.ended && !up.cyclic {
			c.s = up
		}
	}
	if c.s != nil {
		c.prior = (c.s.allFollowed + priorWeight*l.cfg.Prior) / (c.s.allOffered + priorWeight)
		c.run = c.s.maxRun
	}
	if k.depth > 0 {
		// How far a list is read is borrowed from the level above when a
		// list there was read to its end: the friends of friends are read
		// as far as the friends were.
		if up := l.stats[edgeKey{k.depth - 1, k.typ, k.field}]; up != nil && up.ended {
			c.run = max(c.run, up.maxRun)
		}
	}
	return c
}

// limit is the last rank worth fetching. A list is read from its start, a
// few at a time, skipping what the walk read before: nothing beyond half
// again the longest run read from one list of this field so far, so that a
// list read to its end is fetched ahead in growing steps while a hub's
// thousands of refs cost a few; and at least minAhead, since the
// application asks for the next ref as soon as it has the last one, before
// any speculation it caused can start.
func (c *listChances) limit() int { return max(c.run+c.run/2, minAhead) }

// counts reports whether the next ref's rank decides its chance, so that
// whether it was read is worth looking up.
func (c *listChances) counts() bool {
	return c.s != nil && (c.rank <= c.limit() || c.own > 0 && c.whole)
}

// done reports whether every ref left of the list has chance 0: nothing
// is known of its field, or the next ref is past the limit of a list not
// being read to its end (beyond), so that a hub's thousands of refs past
// what applications read cost no estimate each.
func (c *listChances) done() bool {
	return c.s == nil || c.rank > c.limit() && (c.own == 0 || !c.whole)
}

// next is the chance of the next ref, skipped by the walk or not. A
// position's estimate borrows strength from its field's.
func (c *listChances) next(skipped bool) float64 {
	pos, rank := c.pos, c.rank
	c.pos++
	if !skipped {
		c.rank++
	}
	if c.s == nil { // nothing known: not fetched before the application shows it reads the field
		return 0
	}
	p := c.at(pos)
	if p > 0 && rank > c.limit() {
		return c.beyond(p, rank)
	}
	return p
}

// at is the chance of the ref at pos, within the limit. Of a list being
// read, which has been read to c.last, its refs further down are read as
// often as the field's lists read that far go on to their position, not
// as often as all lists of the field reach it, most of which nobody starts
// (a friend's friends, read in friends of friends after a dozen friends'
// lists were not). Where no list was offered yet, nothing says it stops:
// the limit and the Copernican continuation decide (beyond). A list read
// to fewer than 2×minAhead positions has not shown that it is read on,
// however often it was read that far: a popular user's first three
// friends, read in each view of the user, and a view or two after them
// taken for follows of the list, whose next positions' low estimate, over
// theirs, made likely (the hot spot at full size made a sixth more round
// trips, and was slower than no prefetching at 0 ms).
func (c *listChances) at(pos int) float64 {
	b := bucket(pos)
	p := estimate(c.s, c.prior, b, c.likely)
	if c.own > 0 && c.last >= 2*minAhead-1 && pos > c.last {
		switch {
		case c.s.offered[b] < minEvidence:
			p = 1
		case c.reach > 0:
			p = min(p/c.reach, 1)
		}
	}
	return p
}

// most is the highest chance a ref of a list not being read can have:
// its position's estimate, within the limit.
func (c *listChances) most() float64 {
	m := 0.0
	for b := range buckets {
		m = max(m, estimate(c.s, c.prior, b, c.likely))
	}
	return m
}

// estimate is the chance of a ref in position bucket b of a list of s's
// field, prior being the field's: the position's evidence, borrowing
// strength from the field's; 0 when the field's follows do not show a
// pattern (fieldStats.shown), or when it is below likely and rests on fewer
// than minEvidence offers (a guess), or on follows of fewer than
// minLists lists (a coincidence: a reader of random objects reads, now and
// then, one that the object read before it points to, and one such follow
// among a few dozen offers, weighed against the prior, reached 1/8).
// Chances and Followed both use it, so that the fields an Expand ahead
// follows are those whose refs a level's chances take.
func estimate(s *fieldStats, prior float64, b int, likely float64) float64 {
	if !s.shown() {
		return 0 // a coincidence, for all the follows say
	}
	p := rate(s, prior, b)
	if p < likely && (s.offered[b] < minEvidence || s.lists < minLists) {
		return 0 // a guess: see minEvidence and minLists
	}
	return p
}

// rate is the follow rate of position bucket b of s's field, borrowing
// strength from the field's, prior.
func rate(s *fieldStats, prior float64, b int) float64 {
	return (s.followed[b] + priorWeight*prior) / (s.offered[b] + priorWeight)
}

// minLists is how many lists of a field must have been followed for a
// chance below Threshold to count: one list read from once may be chance,
// two are a pattern. A chance of Threshold or more (the next friends of a
// list being read) needs no more than the follow it rests on.
const minLists = 2

// minEvidence is how many offers of a list position a chance below
// Threshold must rest on. Below it the chance is mostly the field's, or the
// prior: a guess, which within the levels ahead, where chances down to
// MinChance are fetched, would fetch the positions a reader was never seen
// to reach (a profile view's third post, in the first views). A chance of
// Threshold or more is fetched at any distance, as before it had evidence.
const minEvidence = 4
