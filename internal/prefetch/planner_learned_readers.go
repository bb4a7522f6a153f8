package prefetch

// Readers. Several application requests read through one sidecar at once
// (a service's handlers, each walking its own user's friends), and their
// reads arrive interleaved. The evidence a reader leaves about its lists is
// its own: that one reader has gone on from a level does not say another,
// reading the level beside it, has. Each object read belongs to the walk of
// the direct request it was reached from (openList.root), and closeLocked
// does not close the lists of another walk that is being read beside the
// follow's: one that read after the follow's walk started, and within the
// last activeWalk requests. One reader's walks come one after another (a
// feed's next user: the lists its last user left are closed at its first
// follow, as before), readers at work side by side read in each other's
// walks. Without it, every reader's follows closed the lists the others
// were about to read, as not followed: of 16 friends-of-friends walks over
// a social graph (BenchmarkLearnedReadersInterleaved), read one at a time
// or interleaved by 2, 4 and 8 readers, a read's parent gave it a chance
// of 1/8 or more for 73% of the reads alone and 40%, 60% and 36%
// interleaved; with it (and rootLocked), 75%, and 54%, 61% and 59%. On
// W5's friends of friends by 4 readers at full size the default makes
// about a third fewer origin round trips.

// activeWalk is how many requests after its last read a walk may still be
// read beside another (see above).
const activeWalk = 32

// walkSpan is when a walk started and last read, by request.
type walkSpan struct{ start, last int }

// rootLocked returns the walk a read of id asked for directly belongs to:
// the walk of the last object read, when one of its lists offers id (a
// reader that goes on by other means than in list order: a walk down a
// random branch, the next friend after one whose offer was dropped), else
// a walk of its own. Without it one reader's walk came apart into walks
// beside each other, whose lists no follow closed: W5's friends of
// friends fetched 4.3–4.9 objects per object read instead of 3.9–4.4.
func (l *Learned) rootLocked(id string) string {
	inLast := func(of *offer) bool { return of.list.root == l.lastRoot }
	if c := l.offers[id]; l.lastRoot != "" && c != nil && (indexOffer(c.pending, inLast) >= 0 || indexOffer(c.passed, inLast) >= 0) {
		return l.lastRoot
	}
	return id
}

// walkedLocked records that the walk of root read at this request.
func (l *Learned) walkedLocked(root string) {
	w, ok := l.walks[root]
	if !ok {
		w.start = l.request
	}
	w.last = l.request
	l.walks[root] = w
	if len(l.walks) > 4*activeWalk && l.request%activeWalk == 0 {
		for r, w := range l.walks {
			if l.request-w.last > activeWalk {
				delete(l.walks, r)
			}
		}
	}
}

// besideLocked reports whether o belongs to a walk other than root's that
// is being read beside it: another reader's lists, not left behind.
func (l *Learned) besideLocked(o *openList, root string) bool {
	if o.root == root {
		return false
	}
	other, ok := l.walks[o.root]
	return ok && other.last > l.walks[root].start && l.request-other.last <= activeWalk
}
