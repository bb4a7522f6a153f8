package prefetch

import (
	"math"
	"slices"
)

// firstRead is the read of a list's first ref, counted as a follow until
// the next read says otherwise: a reader that goes on with the children of
// the object it just read, rather than with the list, started a walk there.
// A profile view of a user who is the first new friend in the list of a
// friend read in the view before looks like a follow of that list, one level
// down; reading the user's posts right after it shows it was not.
//
// Only a read the evidence argues against is undone: one of a field seen
// followed less often than the prior by more than chance explains (see
// seenNotFollowed). A reader that descends a chain or a tree (Knafla's
// navigation: a page's next object, a branch's child) also goes on with the
// children of each object it reads; undoing those follows would teach that
// the chain is never followed, and nothing would ever be prefetched for it.
type firstRead struct {
	child   string
	of      offer
	stats   *fieldStats // of.key's statistics before the follow; nil: none
	show    followShow  // and its field's followShow
	against bool        // those statistics say the field is not followed
}

// readFirstLocked records that child was read as the first ref of of's
// list, before the follow is counted.
func (l *Learned) readFirstLocked(child string, of offer) {
	f := &firstRead{child: child, of: of}
	if sh := l.shows[fieldKey{of.key.typ, of.key.field}]; sh != nil {
		f.show = *sh
	}
	if s := l.stats[of.key]; s != nil {
		copied := *s
		f.stats = &copied
		f.against = seenNotFollowed(s, l.cfg.Prior)
	}
	l.first = f
}

// seenNotFollowed reports whether s's decided offers say its field is
// followed less often than prior: by more than two standard deviations of
// as many offers followed with chance prior, so that chance alone would
// rarely have made them that few. A branch read half the time and passed by
// at its first offer has not shown that (Knafla's left and right); a friend
// list read at its start and its friends' lists passed by, dozens of refs
// each, has. The test must not trip on little evidence: a first read it
// undoes is counted as not followed, so once a field has tripped it, its
// follows are never counted again.
func seenNotFollowed(s *fieldStats, prior float64) bool {
	n := s.allOffered
	return s.allFollowed < prior*n-2*math.Sqrt(n*prior*(1-prior))
}

// checkFirstLocked is told how each read was claimed (claimed reports
// whether it follows a list, of which): if it follows the list of the object
// a first read just read, and the evidence was against that read being a
// follow, it was a direct request after all, and revertFirstLocked undoes
// its follow; of moves to depth 0 with it.
func (l *Learned) checkFirstLocked(of *offer, claimed bool) {
	f := l.first
	l.first = nil
	if f != nil && f.against && claimed && of.parent == f.child {
		l.revertFirstLocked(f)
		of.key.depth = 0
	}
}

// revertFirstLocked makes f's read a direct request: the follow is
// uncounted (its field's statistics, what its follows show and the pace's
// fan-out restored, the list not started) and
// counted as not followed instead, and the child and what it offered move
// to depth 0.
func (l *Learned) revertFirstLocked(f *firstRead) {
	if f.stats != nil {
		*l.stats[f.of.key] = *f.stats
	} else {
		delete(l.stats, f.of.key)
	}
	if sh := l.shows[fieldKey{f.of.key.typ, f.of.key.field}]; sh != nil {
		sh.follows, sh.quick, sh.runs = f.show.follows, f.show.quick, f.show.runs // the refs offered since were
	}
	delete(l.lists, listKey{f.of.parent, f.of.key.field})
	l.pace.unfollowed()
	l.decideLocked(f.of, false)
	r := l.depth[f.child]
	r.depth = 0
	l.depth[f.child] = r
	l.startWalkLocked()
	l.walkRead(f.child, "")
	f.of.list.started = slices.DeleteFunc(f.of.list.started, func(s string) bool { return s == f.of.key.field })
	if o := l.open.latest(f.child); o != nil {
		l.moveLocked(o, 0)
		o.root = f.child // a walk of its own
	}
	l.walkedLocked(f.child)
}

// maxWalk bounds the ids remembered as read in one walk.
const maxWalk = 4096

// startWalkLocked starts a walk: what was read before it is what an
// application that reads each object once per walk reads again. It deletes
// the ids read rather than clearing the map, whose cost is its capacity:
// random reads start a walk at every read, with one id to forget.
func (l *Learned) startWalkLocked() {
	for _, id := range l.walked {
		delete(l.walk, id)
	}
	l.walked = l.walked[:0]
}

// walkRead records that id was read in the current walk, from the list of
// parent ("" when asked for directly).
func (l *Learned) walkRead(id, parent string) {
	if len(l.walk) >= maxWalk {
		l.startWalkLocked()
	}
	n := len(l.walk)
	if l.walk[id] = parent; len(l.walk) > n {
		l.walked = append(l.walked, id)
	}
}
