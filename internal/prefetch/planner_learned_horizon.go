package prefetch

// The horizon: what the learned planner remembers of the refs it offered,
// and when it forgets them.

// childOffers are the offers of one child: those of the lists offering it,
// first first, and those of the lists the application passed by
// (closeLocked), at most maxOffers of each (an offer is in one or the
// other). The ring points at it, so that expiring an offer costs no lookup
// by id: an offer read costs one lookup when offered, one when passed by
// and one when read, where keeping pending and passed offers in maps of
// their own cost eight. A record leaves Learned.offers when its child is
// read (claimLocked) or its last offer expires or is dropped; the ring
// entries still pointing at it then find nothing to expire.
type childOffers struct {
	id              string
	pending, passed []offer
	one             [1]offer // pending's first array: most children are offered by one list
}

// offerEntry is one offer in the ring: of its child's record, made at
// request seq by the list of parent.
type offerEntry struct {
	child   *childOffers
	seq     int
	parent  string
	renewed bool // by renewsLocked
}

// pendingOf returns the offers of id pending.
func (l *Learned) pendingOf(id string) []offer {
	if c := l.offers[id]; c != nil {
		return c.pending
	}
	return nil
}

// tidyLocked drops c from the records when it holds no offer.
func (l *Learned) tidyLocked(c *childOffers) {
	if len(c.pending) == 0 && len(c.passed) == 0 && l.offers[c.id] == c {
		delete(l.offers, c.id)
	}
}

// expireLocked forgets what the horizon has passed: offers (not followed,
// unless renewed: popOfferLocked), the depth of reads, open lists, and the
// lists read from, and keeps each within maxLiveOffers.
func (l *Learned) expireLocked() {
	for l.ring.len() > 0 && l.request-l.ring.front().seq > l.cfg.Horizon {
		l.popOfferLocked(true)
	}
	for len(l.reads) > 0 && (l.request-l.reads[0].seq > l.cfg.Horizon || len(l.reads) > maxLiveOffers) {
		// Forgotten unless read again since: a friend read in one friends
		// of friends session and again in the next is remembered at the
		// next one's depth until the horizon has passed that read too.
		if e := l.reads[0]; l.depth[e.id].seq == e.seq {
			delete(l.depth, e.id)
		}
		l.reads = l.reads[1:]
	}
	cut := l.request - l.cfg.Horizon - 1
	if l.ring.len() > 0 {
		cut = max(cut, l.ring.front().seq-1) // lists whose offers maxLiveOffers pushed out
	}
	l.open.expire(cut)
	if l.request%l.cfg.Horizon == 0 || len(l.lists) > maxLiveOffers { // once per horizon, not on every request
		l.forgetListsLocked()
	}
}

// forgetListsLocked forgets the lists not followed within the horizon,
// and, while more than maxLiveOffers/2 are left, those not followed within
// half as many requests again: a request may follow --max-ids lists, and
// 512 requests of those kept half a million.
func (l *Learned) forgetListsLocked() {
	for idle := l.cfg.Horizon; ; idle /= 2 {
		for k, run := range l.lists {
			if l.request-run.request > idle {
				delete(l.lists, k)
			}
		}
		if len(l.lists) <= maxLiveOffers/2 || idle == 0 {
			return
		}
	}
}

// maxLiveOffers bounds the offers remembered, and the reads whose depth
// is: an offer is forgotten, and counts as not followed, when the horizon
// passes it or maxLiveOffers newer ones were made, whichever comes first.
// What the learner holds is then bounded by what it is offered, not by
// how many requests the horizon spans: each request may read --max-ids
// objects, each with up to maxLists lists of offersPerList refs offered
// (8,192): 300 requests of 20 objects with 8 lists of 300 refs held
// 12 million offers, 3.2 GB; at most maxLiveOffers, 27 MB
// (BenchmarkLearnedLongListsMemory). W5 at full size, the most the
// benchmarks offer, holds about 35,000 at most.
const maxLiveOffers = 1 << 16

// popOfferLocked forgets the oldest offer of the ring: a pending one counts
// as not followed, unless, at its horizon (not when pushed out by newer
// ones), it waits another (renewsLocked); a passed one was decided when
// passed by.
func (l *Learned) popOfferLocked(horizon bool) {
	e := l.ring.pop()
	if e.renewed {
		l.renewed--
	}
	c := e.child
	match := func(of *offer) bool { return of.due == e.seq && same(of.parent, e.parent) }
	if i := indexOffer(c.pending, match); i >= 0 && horizon && l.renewsLocked(&c.pending[i]) {
		of := &c.pending[i]
		of.due = l.request
		of.renewals++
		l.renewed++
		l.ring.push(offerEntry{child: c, seq: of.due, parent: of.parent, renewed: true})
	} else if of, ok := dropOffer(&c.pending, match); ok {
		l.decideLocked(of, false)
	} else {
		dropOffer(&c.passed, match)
	}
	l.tidyLocked(c)
}
