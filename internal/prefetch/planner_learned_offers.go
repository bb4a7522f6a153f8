package prefetch

import (
	"slices"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// offersPerList bounds what one object's list costs to remember: its first
// refs, where applications read, and, as a follow comes near the last of
// them, the next offersPerList (moreLocked).
const offersPerList = 256

func (l *Learned) offerLocked(o *graph.Object, depth int, root string, group *readGroup) {
	if len(o.Refs) == 0 {
		return // a leaf: nothing to offer (most reads of a tree)
	}
	lists, left := l.listsOf(o)
	list := &openList{id: o.ID, typ: o.Type, root: root, depth: depth, seq: l.request, group: group,
		children: make([]string, 0, min(len(o.Refs), offersPerList))}
	f := &lists[0]
	for j := 0; left > 0; j++ { // a hub's refs past its lists' first are offered as they are read (moreLocked)
		r := &o.Refs[j]
		if !same(f.field, r.Field) {
			i := l.refIndex.find(r.Field)
			if i < 0 {
				continue // a field past maxLists
			}
			f = &lists[i]
		}
		i := f.pos
		f.pos++
		if i >= offersPerList {
			continue
		}
		left--
		if i == offersPerList-1 && f.n > offersPerList {
			list.obj = o
			list.more = append(list.more, listCut{field: r.Field, next: j + 1, pos: i + 1, n: f.n, back: f.back})
		}
		l.offerRefLocked(list, r, i, f.n, f.back, 0)
	}
	for i := range lists {
		l.offeredLocked(o.Type, lists[i].field, min(lists[i].n, offersPerList))
	}
	if len(list.children) > 0 {
		l.open.add(list)
	}
}

// offerRefLocked offers r, the pos'th of its field's n refs, from list,
// whose refs before from's (by idx) count as followed when a child's
// offers make room (see farthestLocked): none for a list just read, those
// up to its furthest follow for the next refs of a list being read.
func (l *Learned) offerRefLocked(list *openList, r *graph.Ref, pos, n int, back bool, from int) {
	if l.ring.len() >= maxLiveOffers {
		l.popOfferLocked(false) // before c is looked up: it may be the one popped
	}
	c := l.offers[r.ID]
	if c == nil {
		c = &childOffers{id: r.ID}
		c.pending = c.one[:0]
		l.offers[r.ID] = c
	}
	offers := c.pending
	if indexOffer(offers, func(of *offer) bool { return same(of.parent, list.id) }) >= 0 {
		return // the object read again
	}
	if len(offers) >= maxOffers {
		// One offer makes room: the one farthest from being followed,
		// if farther than this one (see farthestLocked).
		far := l.farthestLocked(offers)
		if offers[far].idx-l.followedTo(offers[far]) <= len(list.children)-from {
			return
		}
		offers = slices.Delete(offers, far, far+1)
	}
	k := edgeKey{min(list.depth, maxContextDepth), list.typ, r.Field}
	c.pending = append(offers, offer{key: k, pos: pos, last: pos == n-1, back: back,
		parent: list.id, list: list, idx: len(list.children), seq: l.request, due: l.request})
	l.ring.push(offerEntry{child: c, seq: l.request, parent: list.id})
	list.children = append(list.children, r.ID)
}

// moreAhead is how near the last ref offered of a long list a follow
// comes before the list's next offersPerList refs are offered.
const moreAhead = offersPerList / 2

// moreLocked offers the next offersPerList refs of of's list, when it has
// more than were offered, the follow of of came within moreAhead of the
// last, and the list has been read that far, moreAhead follows at least:
// an application reading a friend's 540 friends reads past the first 256,
// and each read past them would otherwise be a direct request at depth 0,
// whose own lists the reads after it do not follow. A read that a hub's
// list claims far down it, where nobody read the list (a popular user
// viewed, who is a hub's 200th friend), is not a reader nearing its end:
// offering the hub's next refs there made the hot spot's views follows of
// hubs, and a tenth more round trips.
func (l *Learned) moreLocked(of offer) {
	o := of.list
	i := slices.IndexFunc(o.more, func(c listCut) bool { return same(c.field, of.key.field) })
	if i < 0 || of.idx+moreAhead < len(o.children) {
		return
	}
	if run := l.lists[listKey{of.parent, of.key.field}]; run == nil || run.followed < moreAhead {
		return
	}
	c := &o.more[i]
	from := l.followedTo(of)
	added := 0
	for ; c.next < len(o.obj.Refs) && added < offersPerList; c.next++ {
		if r := &o.obj.Refs[c.next]; same(r.Field, c.field) {
			l.offerRefLocked(o, r, c.pos, c.n, c.back, from)
			c.pos++
			added++
		}
	}
	l.offeredLocked(o.typ, c.field, added)
	if c.pos >= c.n {
		o.more = slices.Delete(o.more, i, i+1)
		if len(o.more) == 0 {
			o.obj = nil
		}
	}
}

// farthestLocked returns which of offers, all of one child, is the farthest
// from being followed: the most refs of its list before it that are not
// followed yet (a read follows a list in order: inOrderLocked), the oldest
// among equals. When a child is offered by more lists than maxOffers, those
// are the lists a read of it least likely follows: keeping the first
// offers instead left a friend shared with an earlier walk's friends offered
// only by their lists (a hundred refs down each), so that its read as the
// first follow of the list being read looked like a direct request, and
// every read below it too (W5's second friends-of-friends session: ten
// objects fetched for each one read); keeping the latest ones left the
// lists of a level's first objects, read before the next level's big
// lists, out the same way. The offer dropped is forgotten, not decided:
// nothing says whether its list would have been read to it.
func (l *Learned) farthestLocked(offers []offer) int {
	far, dist := 0, -1
	for i, of := range offers {
		if d := of.idx - l.followedTo(of); d > dist {
			far, dist = i, d
		}
	}
	return far
}

// followedTo is the idx of the first ref of of's list past those followed
// so far: 0 for a list not started.
func (l *Learned) followedTo(of offer) int {
	if run := l.lists[listKey{of.parent, of.key.field}]; run != nil {
		return run.last + 1
	}
	return 0
}
