package prefetch

import "slices"

// What a follow asks to have expanded again: the parents Read returns
// (see followLocked), besides the list it came from when its job could
// not have fetched what is now due (movedLocked).

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
