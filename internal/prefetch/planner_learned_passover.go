package prefetch

// passOver is a read that a list offering it could not claim because the
// reader had not read the refs before it (inOrderLocked): the reader passed
// them over.
type passOver struct {
	list  *openList
	field string
	idx   int // of the ref read, among list's offers
}

// passedOverLocked decides, once a request's reads are all counted, the
// refs that its reads passed over (l.over) as not followed: the refs before
// a read's own in the list of an object read by this request or the one
// before it, where nothing read from that list since started it. A walk
// down one random branch of a tree reads its parent's k-th child and none
// before it. Until this, those refs waited for the horizon to count, while
// the walks that took the first branch counted as follows at once, so the
// first position's chance came out well above the one in the fan-out it
// is (W7's large payloads at 5 ms fetched the first child of each object
// read, 128 KiB each, for nothing: 66–68 origin round trips where no
// prefetching makes 60; now 62–63). Only the object read last: a read far
// down the list of one read earlier may be another reader's (a popular
// user viewed, who is in the list of a user someone else is reading), and
// passing over that list too made fewer reads of friends-of-friends walks
// read side by side by 2, 4 and 8 readers likely in their parents' lists:
// 0.37, 0.53 and 0.45 of them instead of 0.49, 0.64 and 0.54
// (BenchmarkLearnedReadersInterleaved, with the rule of
// planner_learned_readers.go but not rootLocked). Decided once a request
// is counted, so that a batch read whose order is not the list's (a set of
// ids) passes over nothing that it reads. The refs go to passed, as those
// of a list closed (closeListsLocked): a read that comes back to them in
// order takes the decision back (claimLocked).
func (l *Learned) passedOverLocked() {
	for i, p := range l.over {
		l.over[i] = passOver{}
		if l.lists[listKey{p.list.id, p.field}] != nil {
			continue // being read: a reader may skip a ref (maxSkipped), and come back
		}
		from := p.list.passedTo(p.field)
		if from >= p.idx {
			continue
		}
		p.list.passTo(p.field, p.idx)
		for _, id := range p.list.children[from:p.idx] {
			if _, read := l.depth[id]; read {
				continue // a reader skips what it read before (inOrderLocked)
			}
			l.passLocked(p.list, id, func(of *offer) bool { return same(of.key.field, p.field) })
		}
	}
	l.over = l.over[:0]
}

// passLocked decides the pending offer of id from o's list that match
// selects, if any, as not followed, and keeps it in passed, where a read
// that follows the list after all takes the decision back (claimLocked).
func (l *Learned) passLocked(o *openList, id string, match func(*offer) bool) {
	c := l.offers[id]
	if c == nil {
		return
	}
	if of, ok := dropOffer(&c.pending, func(of *offer) bool { return same(of.parent, o.id) && match(of) }); ok {
		l.decideLocked(of, false)
		if len(c.passed) < maxOffers {
			c.passed = append(c.passed, of)
		} else {
			l.tidyLocked(c)
		}
	}
}

// listMark is how far one field's list of an openList was passed over.
type listMark struct {
	field string
	to    int // idx of the first offer not passed over
}

// passedTo returns the idx up to which field's list of o was passed over.
func (o *openList) passedTo(field string) int {
	for _, m := range o.marks {
		if same(m.field, field) {
			return m.to
		}
	}
	return 0
}

// passTo records that field's list of o was passed over up to idx.
func (o *openList) passTo(field string, idx int) {
	for i := range o.marks {
		if same(o.marks[i].field, field) {
			o.marks[i].to = idx
			return
		}
	}
	o.marks = append(o.marks, listMark{field, idx})
}
