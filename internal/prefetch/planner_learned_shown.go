package prefetch

// shown reports whether the follows of s's field show that the application
// follows it, rather than a coincidence: a list of it, at any depth, read
// from twice; or minLists lists each followed within quickFollow requests
// of the read that offered it; or minLists follows at least, one for every
// followShare refs of the field offered at least. Until they do, every
// chance of the field is 0 (estimate). Within the horizon a follow is
// counted at once, and an offer nobody follows only when the horizon
// passes it, so one coincidence made its position's chance 1 for the rest
// of a session shorter than the horizon: a reader of random objects reads,
// now and then, one that an object it read before points to (W7's random
// points, 200 reads of 20,000 objects with 4 refs each: 2.3 to 3.4 objects
// fetched per object read, 8% more origin round trips than no
// prefetching). What an application follows it reads from again (a tree's
// children, a friend list), or soon after the object that points to it,
// list after list (a chain's links, a depth-first walk's descent), or
// often for what it was offered (a navigation that queues the pages it
// will visit, Knafla's: without it, W2's default hid 65–72% of the stall
// at 200 µs and 1 ms of think time instead of 74–80%). The first list of a
// field costs its reader a round trip more: its second ref is not fetched
// ahead of it. It is the field's at every depth, where its rates are each
// depth's own: whether a field is followed at all is one question, how
// often at each depth another (a depth-first walk's descent follows one
// list per depth once, and showed nothing at any depth until it came back
// up).
func (s *fieldStats) shown() bool {
	sh := s.show
	return sh != nil && (sh.runs > 0 || sh.quick >= minLists || sh.follows >= minLists && sh.follows*followShare >= sh.offered)
}

// followShare: a field with one follow for every followShare refs offered
// shows a pattern (fieldStats.shown). A reader of random objects follows,
// by coincidence, about one in two hundred (W7's random points: 4 refs an
// object, 20,000 objects; 200 reads offer 800 refs, and a few are read);
// a navigation that takes one of three ways out, one in three.
const followShare = 16

// fieldKey is a type's ref field, at every depth.
type fieldKey struct{ typ, field string }

// followShow counts what shows a field followed (fieldStats.shown): its
// lists first followed within quickFollow requests of their offer, those
// followed twice or more, its follows and its refs offered.
type followShow struct{ quick, runs, follows, offered float64 }

// offeredLocked counts n refs of typ's field offered (fieldStats.shown).
func (l *Learned) offeredLocked(typ, field string, n int) {
	l.showLocked(typ, field).offered += float64(n)
}

// showLocked returns typ's field's followShow, made if need be. Past
// maxStats fields (a hostile origin's made-up ones), a new one each time,
// not kept: the offers it counts are lost, and the fieldStats holding it
// shares it with no other depth.
func (l *Learned) showLocked(typ, field string) *followShow {
	fk := fieldKey{typ, field}
	sh := l.shows[fk]
	if sh == nil {
		sh = &followShow{}
		if len(l.shows) < maxStats {
			l.shows[fk] = sh
		}
	}
	return sh
}

// quickFollow is how many requests after its offer the first follow of a
// list may come and count as soon (see shown): eight, so that eight
// readers interleaved on one sidecar still show theirs, while two
// coincidences that soon are rare (a random reader of 20,000 objects with
// 4 refs each makes one in about 600 reads).
const quickFollow = 8
