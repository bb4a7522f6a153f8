package prefetch

// A list the application is reading, of a field whose lists it reads to
// their end more often than it leaves them with refs unread (friends of
// friends, not a feed's first five), is fetched ahead of its reader further
// than the longest run read from one list allows (listChances.limit): that
// limit grows half again per run, so a list longer than any read before
// costs the reader a round trip per step. Having read r refs of the list,
// the reader goes on to read its (j+1)th with probability r/(j+1) (Gott's
// Copernican argument: with nothing known of where a run stops, it is as
// likely to stop before twice its length as after), times what the
// position's evidence says of a list read that far (listChances.at: 1
// where no list was offered). Those chances meet the scheduler's thresholds
// like any other: within the reads the application makes in two round
// trips, down to 1/8 (eight times the run), beyond them to Threshold (twice
// the run, and only refs that near are given a chance here).

// stoppedLocked counts the lists of o, which the application has left
// behind (closeLocked), that it started and did not read to their end,
// passing by more than maxSkipped refs unread.
func (l *Learned) stoppedLocked(o *openList) {
	for _, f := range o.started {
		run := l.lists[listKey{o.id, f}]
		if run == nil || run.ended || l.unreadLocked(o, f, 0, len(o.children), maxSkipped) <= maxSkipped {
			continue
		}
		if s := l.stats[edgeKey{min(o.depth, maxContextDepth), o.typ, f}]; s != nil {
			s.stops++
		}
	}
}

// readsToEndLocked reports whether lists of k are read to their end more
// often than left with refs unread: at k's depth, or, with neither seen
// there yet, at the level above (friends of friends are read as the
// friends were).
func (l *Learned) readsToEndLocked(k edgeKey) bool {
	s := l.stats[k]
	if (s == nil || s.ends+s.stops == 0) && k.depth > 0 {
		s = l.stats[edgeKey{k.depth - 1, k.typ, k.field}]
	}
	return s != nil && s.ends > s.stops
}

// beyond is the chance of the ref at rank past the limit of a list being
// read, p its position's estimate: the run's Copernican continuation when
// the field's lists are read to their end, 0 otherwise.
func (c *listChances) beyond(p float64, rank int) float64 {
	if c.own == 0 || !c.whole {
		return 0
	}
	q := p * float64(c.own) / float64(rank+1)
	if rank >= c.own+c.due && q < c.likely {
		return 0 // not due within two round trips: only a likely one
	}
	return q
}
