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
		for i := range l.pending[id] {
			if of := &l.pending[id][i]; of.parent == o.id {
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
		if ofList := func(p offer) bool { return p.parent == o.id && p.key.field == field }; slices.ContainsFunc(l.pending[id], ofList) ||
			slices.ContainsFunc(l.passed[id], ofList) {
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
	offers, passed := l.pending[id], l.passed[id]
	delete(l.pending, id)
	delete(l.passed, id)
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

// dropOfferLocked removes from offers and returns the first offer of id
// that match selects.
func dropOfferLocked(offers map[string][]offer, id string, match func(offer) bool) (offer, bool) {
	list := offers[id]
	i := slices.IndexFunc(list, match)
	if i < 0 {
		return offer{}, false
	}
	of := list[i]
	if list = slices.Delete(list, i, i+1); len(list) == 0 {
		delete(offers, id)
	} else {
		offers[id] = list
	}
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

// belowLocked appends to out, when of's list was just read to its end and
// nothing is known yet of its field one level down, the objects its list
// led to whose own lists of the field wait unstarted: a list read to its
// end lends its evidence to the level below (listLocked), so those lists
// became likely with this read, and a reader going level by level reads
// them next, the first of them before the jobs of reads one level down
// could fetch it (friends of friends: the user's friends read, then the
// first friend's friends).
func (l *Learned) belowLocked(of offer, out []string) []string {
	if l.stats[edgeKey{min(of.key.depth+1, maxContextDepth), of.key.typ, of.key.field}] != nil {
		return out // the level below has evidence of its own
	}
	n := 0
	for _, id := range of.list.children {
		if o := l.open.latest(id); o != nil && n < maxPeers && len(o.started) == 0 && o.typ == of.key.typ {
			out = append(out, id)
			n++
		}
	}
	return out
}

// movedLocked reports whether the follow of of, just counted, can have
// changed the chances of its list's refs beyond what the job of the read
// before it fetched, so that the list is worth expanding again: the list's
// first follow (the list is being read from now on, and its field may
// have had no evidence before), a follow whose position's evidence was
// still thin (a chance that was a guess may now be fetched: minEvidence),
// a follow of a list with refs past the limit whose lists are read to
// their end (the Copernican continuation grows with each follow), or a
// follow of a list read to 2×minAhead positions that moves what the
// list's job would fetch as due: the refs
// due (the reads of two round trips past the last one read, at least
// 2×minAhead) are not likely, so the last job fetched only those due then,
// and the reader has come within half of them of where it reached, or into
// another position bucket (listChances.at moved); or they became likely
// since the last job, which fetched only those due. Otherwise the read's
// job, and the jobs of the reads before it, expanded the same list with
// the same chances: a tree read whole (W1) re-expanded every parent below
// which each child was read, walking through its held levels once for
// each child; a list whose next refs are likely was fetched whole, up to
// the job's budget, by the job of its first follows.
func (l *Learned) movedLocked(of offer) bool {
	run := l.lists[listKey{of.parent, of.key.field}]
	if run == nil {
		return true
	}
	due := max(2*l.pace.distance(l.rtt), 2*minAhead)
	end := run.last + 1 + due // the last ref due
	if of.list.obj == nil {
		end = min(end, len(of.list.children)-1)
	}
	arm := func(likely bool) bool {
		run.armed, run.armedAt, run.likely = run.followed+due, bucket(run.last), likely
		return true
	}
	if run.followed == 1 {
		return arm(l.fetchedPastLocked(of, end))
	}
	if s := l.stats[of.key]; s == nil || s.offered[bucket(of.pos)] <= minEvidence {
		return arm(l.fetchedPastLocked(of, end))
	}
	if run.last >= 2*minAhead-1 && (of.idx+1 < len(of.list.children) || of.list.obj != nil) { // read on, with refs left
		likely := l.fetchedPastLocked(of, end)
		switch {
		case likely && !run.likely:
			return arm(true) // the refs due became likely: the last job fetched only what was due
		case !likely && (run.followed+due/2 >= run.armed || bucket(run.last) != run.armedAt):
			return arm(false) // the reader nears what the last job reached, or the chances moved (listChances.at)
		}
	}
	c := l.listLocked(of.key)
	return len(of.list.children) > c.limit() && l.readsToEndLocked(of.key)
}

// fetchedPastLocked reports whether the job of of's list fetches its refs
// up to the pos'th whether or not they are due: its chance there reaches
// Threshold, within the limit. Then the job the list's last follow in
// the same position bucket asked for (the chances are the same) fetched
// them, up to its budget, and asking again would walk the list for
// nothing: a friend's friends, in friends of friends, are fetched whole
// at its first follows.
func (l *Learned) fetchedPastLocked(of offer, pos int) bool {
	c := l.listLocked(of.key)
	l.readingLocked(&c, of.parent)
	return c.s != nil && pos <= c.limit() && c.at(pos) >= l.cfg.Threshold
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
	}
	l.open.closeBefore(of.seq, of.key.depth, of.parent, func(o *openList) {
		l.closeListsLocked(o)
		l.stoppedLocked(o)
	})
}

// closeListsLocked decides the offers of o's lists that no follow started
// as not followed.
func (l *Learned) closeListsLocked(o *openList) {
	for _, id := range o.children {
		// Not a list the application reads: there later refs may still come.
		if of, ok := dropOfferLocked(l.pending, id, func(of offer) bool {
			return of.parent == o.id && l.lists[listKey{o.id, of.key.field}] == nil
		}); ok {
			l.decideLocked(of, false)
			if len(l.passed[id]) < maxOffers {
				l.passed[id] = append(l.passed[id], of)
			}
		}
	}
}

// maxPeers bounds the objects one follow makes likelier.
const maxPeers = 64

// peersLocked appends to out the objects read recently, no deeper than of's
// parent, none of whose lists has been followed yet: a level read object by
// object (the friends of a feed, the other trees of a query) is followed
// below one object after another, so that what was just learned from the
// first applies to the others before the application gets to them.
func (l *Learned) peersLocked(of offer, out []string) []string {
	for _, o := range l.open.unstarted(of.key.depth, maxPeers) {
		out = append(out, o.id)
	}
	return out
}

// aboveLocked appends to out, on the first follow ever of of's field at
// its depth, the objects read shallower whose lists of that field were
// started and still have refs unread: their jobs walked down to this depth
// when its chance was 0 and fetched nothing there, and a reader going depth
// first comes back to them (a tree's second branch, after the first was
// read to its leaves). peersLocked names the lists not started.
func (l *Learned) aboveLocked(of offer, out []string) []string {
	n := 0
	for _, o := range l.open.shallower(of.key.depth) {
		if n < maxPeers && slices.Contains(o.started, of.key.field) && l.unreadLocked(o, of.key.field, 0, len(o.children), 0) > 0 {
			out = append(out, o.id)
			n++
		}
	}
	return out
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
