package fetch

import "github.com/lookahead-dev/lookahead/internal/graph"

// What an expansion answers: its walk, planning a level (Lookup) and
// collecting it (Delivered), and those who joined its claims (delivered).

// Lookup says whether the expansion has delivered id, or learned that it does
// not exist (obj nil, known true).
func (x *Expansion) Lookup(id string) (obj *graph.Object, known bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	obj, known, _ = x.lookupLocked(id)
	return obj, known
}

// lookupLocked is Lookup, and when id is not known yet, whether the origin
// is still to send it: scheduled, not held, and the stream not over.
// Called with x.mu held.
func (x *Expansion) lookupLocked(id string) (obj *graph.Object, known, coming bool) {
	o, admitted := x.ids.Get(id)
	switch outcomeOf(o) {
	case outAbsent:
		return nil, true, false
	case outReleased:
		return nil, false, false // sent by the walk, no longer held
	case outHeld:
		return o, true, false
	}
	return nil, false, !x.finished && admitted && x.known[id] == nil
}

// delivered answers a waiter for id once its level was released: the
// object received, or not ok for an id that does not exist or did not come.
// An object the walk has sent and let go of since is the cache's copy,
// filled before the level was released.
func (x *Expansion) delivered(id string) (*graph.Object, bool) {
	x.mu.Lock()
	o, _ := x.ids.Get(id)
	x.mu.Unlock()
	switch outcomeOf(o) {
	case outHeld:
		return o, true
	case outReleased:
		if o, _ := x.f.cache.Peek(id); o != nil {
			return o, true
		}
	} // evicted meanwhile, absent or not delivered: the waiter fetches it
	return nil, false
}

// Delivered returns the objects of ids the expansion has received, with the
// ids it has not (nil if all), in the order of ids.
func (x *Expansion) Delivered(ids []string) (objs []*graph.Object, rest []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	objs = make([]*graph.Object, 0, len(ids))
	for _, id := range ids {
		switch o, _ := x.ids.Get(id); outcomeOf(o) {
		case outAwaited, outReleased:
			rest = append(rest, id)
		case outHeld:
			objs = append(objs, o)
		}
	}
	return objs, rest
}
