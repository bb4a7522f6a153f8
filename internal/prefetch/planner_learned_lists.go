package prefetch

import (
	"slices"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// moveLocked moves o and the offers of its lists still pending to depth: o
// was read again, at another depth.
func (l *Learned) moveLocked(o *openList, depth int) {
	l.open.move(o, depth)
	for _, id := range o.children {
		pending := l.pendingOf(id)
		for i := range pending {
			if of := &pending[i]; of.parent == o.id {
				of.key.depth = min(depth, maxContextDepth)
			}
		}
	}
}

// rereadLocked moves the offers still pending of id, read before at
// another depth, to depth: a profile view of a user read as a friend in the
// view before reads its lists as a view's.
func (l *Learned) rereadLocked(id string, depth int) {
	if o := l.open.latest(id); o != nil {
		l.moveLocked(o, depth)
	}
}

// refList is one field's list of an object being offered.
type refList struct {
	field string
	n     int  // refs
	back  bool // one of its first offersPerList points at an object read
	pos   int  // of the next ref
}

// maxLists bounds the fields of one object the learned planner considers:
// the first maxLists in ref order. Objects have a few; one whose refs have
// thousands of fields (a map's keys, or a hostile origin's) would cost
// every read of it a scan of its fields for each ref. Refs of the others
// are never offered and have chance 0.
const maxLists = 32

// listsOf returns o's lists, one per field (an object has few), in
// l.refLists, indexed by field in l.refIndex: valid until the next call;
// and how many refs of them are offered, each list's first offersPerList.
func (l *Learned) listsOf(o *graph.Object) (lists []refList, offered int) {
	lists = l.refLists[:0]
	index := &l.refIndex
	index.reset()
	i := -1 // the list of the ref before: a field's refs usually come together
	for k := 0; k < len(o.Refs); k++ {
		r := &o.Refs[k]
		if i < 0 || !same(lists[i].field, r.Field) {
			i = index.find(r.Field)
		}
		if i < 0 && len(lists) == maxLists {
			k = runEnd(o.Refs, k) - 1 // a field past the object's first maxLists: not offered
			continue
		}
		if i < 0 {
			i = index.add(r.Field)
			lists = append(lists, refList{field: r.Field})
		}
		f := &lists[i]
		if f.n >= offersPerList { // past what is offered: the rest of the run counted at once
			j := runEnd(o.Refs, k)
			f.n += j - k
			k = j - 1
			continue
		}
		f.n++
		offered++
		if !f.back {
			_, f.back = l.depth[r.ID]
		}
	}
	l.refLists = lists
	return lists, offered
}

// maxSkipped is how many refs of a list, since its last follow, a read may
// pass by unread and still follow the list: one the application cannot read
// (a deleted object). A reader reads a list in order, skipping only what it
// read already; an object read further down the list of an object read
// earlier was asked for by other means. A profile view of a user who is the
// 57th friend of a user viewed before is not a sign that friend lists are
// read to the 57th, nor is the user read one level below a direct request.
// The refs passed by are counted when the read comes, not when the list was
// offered: a ref another list offered too was not read for that, unless it
// was read since (a popular user is in many lists, most never read far).
const maxSkipped = 1

// inOrderLocked reports whether the read of of's child follows of's list:
// a reader reads a list in order, skipping what it read before, so the
// first read from a list is its first ref not read, and each later one
// passes by at most maxSkipped refs not read since the last.
func (l *Learned) inOrderLocked(of offer) bool {
	from, most := 0, 0
	if run := l.lists[listKey{of.parent, of.key.field}]; run != nil {
		from, most = run.last+1, maxSkipped
	}
	return l.unreadLocked(of.list, of.key.field, from, of.idx, most) <= most
}

// unreadLocked counts, up to one past limit, the refs of o's list of field
// among its offers from to to (by idx) that are still offered from that
// list, pending or passed by: not read since.
func (l *Learned) unreadLocked(o *openList, field string, from, to, limit int) int {
	n := 0
	for _, id := range o.children[min(from, to):to] {
		if _, read := l.depth[id]; read {
			continue // read before the list was offered (a read since takes its offers)
		}
		c := l.offers[id]
		if c == nil {
			continue
		}
		if ofList := func(p *offer) bool { return same(p.parent, o.id) && same(p.key.field, field) }; indexOffer(c.pending, ofList) >= 0 ||
			indexOffer(c.passed, ofList) >= 0 {
			if n++; n > limit {
				break
			}
		}
	}
	return n
}

// maxOffers bounds the lists remembered as offering one child (a shared
// product, a friend of many friends): the latest ones (offerLocked).
const maxOffers = 4

// claimLocked takes the offers of id, which is being read, and returns the
// one whose list the read follows, if any: of those pending it could
// follow, the one of the object the application read from last (the lists
// it is reading now), the first offered among equals; else the first of
// those passed by (closeLocked) whose field is not seen not followed and
// whose list did not point back at an object read before it, and then its
// not-follow is taken back. A ref of a field seen not followed, in a list
// the reader left, is more likely asked for directly: a profile view of a
// user who is the first friend of a friend viewed before. And a reader that
// queues refs to come back to them queues what it has not read: a user
// viewed again is not reached through the author of a post read in a view
// before. The others
// are dropped: a reader that reads each object once passes it by in them.
// An offer pending whose list the read does not follow counts as not
// followed.
func (l *Learned) claimLocked(id string) (offer, bool) {
	var offers, passed []offer
	if c := l.offers[id]; c != nil {
		offers, passed = c.pending, c.passed
		c.pending, c.passed = nil, nil // for the ring entries still pointing at it
		delete(l.offers, id)
	}
	best := -1
	for i, of := range offers {
		if l.inOrderLocked(of) && (best < 0 || of.list.read > offers[best].list.read) {
			best = i
		}
	}
	if best >= 0 {
		return offers[best], true
	}
	for _, of := range passed {
		if s := l.stats[of.key]; !of.back && l.inOrderLocked(of) && (s == nil || !seenNotFollowed(s, l.cfg.Prior)) {
			l.unpassLocked(of)
			return of, true
		}
	}
	for _, of := range offers {
		l.decideLocked(of, false) // read, but not from that list
		if of.list.seq >= l.request-1 {
			l.over = append(l.over, passOver{of.list, of.key.field, of.idx})
		}
	}
	return offer{}, false
}

// unpassLocked takes back the not-follow closeLocked counted for of.
func (l *Learned) unpassLocked(of offer) {
	s, b := l.stats[of.key], bucket(of.pos)
	if s == nil || s.offered[b] < 1 {
		return // the statistics were restored to before it (revertFirstLocked)
	}
	s.offered[b]--
	s.allOffered--
}

// indexOffer returns the index of the first of offers that match selects,
// -1 if none. Unlike slices.IndexFunc it hands match a pointer: offers are
// large, and the learner scans them for every ref of every object read.
func indexOffer(offers []offer, match func(*offer) bool) int {
	for i := range offers {
		if match(&offers[i]) {
			return i
		}
	}
	return -1
}

// dropOffer removes from offers and returns the first offer that match
// selects.
func dropOffer(offers *[]offer, match func(*offer) bool) (offer, bool) {
	i := indexOffer(*offers, match)
	if i < 0 {
		return offer{}, false
	}
	of := (*offers)[i]
	*offers = slices.Delete(*offers, i, i+1)
	return of, true
}

// followLocked counts a follow of of, closes the lists the application has
// passed by, and appends to out the objects whose lists became likelier:
// of's parent, when the follow changed what its list's job would fetch
// (movedLocked), and, when the follow read a list of its field further than
// ever, the peers waiting for it.
func (l *Learned) followLocked(of offer, out []string) []string {
	longer := l.decideLocked(of, true)
	if of.list.obj != nil {
		l.moreLocked(of)
	}
	of.list.read = l.request
	l.closeLocked(of)
	if longer || l.movedLocked(of) {
		out = append(out, of.parent)
	}
	if longer {
		out = l.peersLocked(of, out)
	}
	if s := l.stats[of.key]; s != nil && s.allFollowed == 1 {
		out = l.aboveLocked(of, out)
	}
	if of.last {
		out = l.belowLocked(of, out)
	}
	return out
}

// closeLocked decides, when the application reads from a list of an object
// read at request seq and depth d, that the lists it has not started of the
// objects read before at depth d or deeper are not followed: a reader going
// level by level has left them behind. Without it they would wait the whole
// horizon to count, and a feed that never reads its friends' friends would
// look, for that long, like one that might. The decision is a forecast: an
// offer passed by stays in passed until the horizon, and a read that
// follows its list after all takes the not-follow back (claimLocked). A
// reader that queues the refs it meets and reads them first in first out
// (Knafla's pages, an Out-Ref's three pages each) comes back to lists it
// left; without that, they would count as never followed.
func (l *Learned) closeLocked(of offer) {
	if !slices.Contains(of.list.started, of.key.field) {
		of.list.started = append(of.list.started, of.key.field)
		if g := of.list.group; g != nil {
			g.started, g.request, g.directs = true, l.request, l.directs
		}
	}
	keep := func(o *openList) bool { return o.id == of.parent || l.besideLocked(o, of.list.root) }
	l.open.closeBefore(of.seq, of.key.depth, keep, func(o *openList) {
		l.closeListsLocked(o)
		l.stoppedLocked(o)
	})
}

// closeListsLocked decides the offers of o's lists that no follow started
// as not followed.
func (l *Learned) closeListsLocked(o *openList) {
	// Whether the application reads the list of the field asked last: a
	// list's refs come together, so that is one lookup per field.
	asked, field, reads := false, "", false
	unread := func(of *offer) bool {
		if !asked || !same(of.key.field, field) {
			asked, field = true, of.key.field
			reads = l.lists[listKey{o.id, field}] != nil
		}
		return !reads
	}
	for _, id := range o.children {
		// Not a list the application reads: there later refs may still come.
		l.passLocked(o, id, unread)
	}
}

// treeLikeLocked returns, for a key nothing is known about yet, the
// statistics of the deepest level of its type and field that is: when the
// level above that one was read as a tree's is, every list to its end, and
// that level has been read the same way so far (every ref decided was
// followed), none of either pointing back at an object read before, the
// levels below are expected to be read the same way. Nil otherwise: a feed
// reads the first friends of a user, not the friends' friends, and friends
// of friends point back at the user.
func (l *Learned) treeLikeLocked(k edgeKey) *fieldStats {
	for d := k.depth - 1; d >= 1; d-- {
		s := l.stats[edgeKey{d, k.typ, k.field}]
		if s == nil {
			continue
		}
		up := l.stats[edgeKey{d - 1, k.typ, k.field}]
		if up == nil || !up.ended || up.cyclic || s.cyclic || s.allFollowed == 0 || s.allFollowed < s.allOffered {
			return nil
		}
		return s
	}
	return nil
}

// dedupeScan is the longest list dedupe checks pairwise.
const dedupeScan = 8

// dedupe removes repeated ids in place, keeping the first of each. A list
// of a few, as most requests read, is checked without a map.
func dedupe(ids []string) []string {
	if len(ids) <= dedupeScan {
		out := ids[:0]
		for _, id := range ids {
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
		return out
	}
	seen := make(map[string]bool, len(ids))
	out := ids[:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
