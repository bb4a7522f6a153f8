package prefetch

import (
	"cmp"
	"slices"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// openList is an object read whose lists the application has not all been
// seen to follow yet.
type openList struct {
	id, typ  string
	root     string     // the direct request whose walk read it (see besideLocked)
	depth    int        // below a direct request
	seq      int        // request that read it
	children []string   // the ids it offered
	started  []string   // the fields of its lists followed
	read     int        // the request that last followed one of them
	group    *readGroup // the objects read with it, when a request read several
	// obj and more, for an object with a list longer than offersPerList:
	// where each such list's offers stopped (moreLocked).
	obj   *graph.Object
	more  []listCut
	marks []listMark // how far its lists were passed over (passedOverLocked)
}

// readGroup is the objects one request read together: a query's results,
// which applications go through one after another.
type readGroup struct {
	started bool // a list of one of them was followed
	// request and directs: Learned.request and Learned.directs when the
	// last of those was started.
	request, directs int
}

// maxRenewals and maxRenewed bound how long an offer of a query's result
// waits for its reader (renewsLocked): 32 horizons, and 8,192 offers
// waiting past their horizon at once (about a megabyte).
const (
	maxRenewals = 32
	maxRenewed  = 8192
)

// renewsLocked reports whether of, an offer at its horizon still pending,
// waits another horizon instead of counting as not followed: when no list
// of its object has been followed yet, a list of another object read in
// the same request has, and since the last of those was started at most
// one request in four read an object directly, not by following a ref.
//
// An application goes through a query's results one after another, each
// as deep as it reads it: W1 reads a query's ten task trees one by one,
// 781 objects each, and the tenth tree's list comes to be read 7,000
// requests after the query. Counted as not followed at the horizon, those
// lists made the trees' first level look unread (nine lists not followed
// to each one followed), and each later tree's reads direct requests, not
// follows, whose jobs fetched each of its five subtrees in its own round
// trip: 41 origin round trips a query at 0 ms instead of about one a tree.
// Such a reader reads by following refs: in W1's trees 141 reads of 780
// count as direct (the last leaves of each, whose lists' offers a reader
// going level by level reaches past the horizon). One that read a result
// or two and went elsewhere (a search page, one result opened, then other
// searches) reads directly, and leaves the others' lists to count as not
// followed at the horizon, as before.
func (l *Learned) renewsLocked(of *offer) bool {
	o := of.list
	if o.group == nil || !o.group.started || len(o.started) > 0 || of.renewals >= maxRenewals || l.renewed >= maxRenewed {
		return false
	}
	g := o.group
	return 4*(l.directs-g.directs) <= l.request-g.request
}

// listCut is where the offers of a long list stopped.
type listCut struct {
	field string
	next  int // index in the object's refs to go on from
	pos   int // in the field's list, of the next ref to offer
	n     int // refs in the field's list
	back  bool
}

// openLists are the open lists, indexed for what a follow asks of them.
// A follow closes the lists read before its parent at its depth or deeper
// (closeLocked): with the lists of each depth in read order, those are a
// prefix of each deeper depth's, so that a follow costs the lists it
// closes, each once, and not every list a breadth-first walk holds open.
// Depths are told apart up to maxContextDepth, as a follow's offer tells
// them (edgeKey): deeper lists share the last.
type openLists struct {
	byDepth [maxContextDepth + 1][]*openList // each in read order (seq)
	byID    map[string]*openList             // the latest list of each id
}

func openDepth(depth int) int { return min(depth, maxContextDepth) }

// add opens o, read last.
func (s *openLists) add(o *openList) {
	d := openDepth(o.depth)
	s.byDepth[d] = append(s.byDepth[d], o)
	if s.byID == nil {
		s.byID = map[string]*openList{}
	}
	s.byID[o.id] = o
}

// latest returns the last list opened of id, if it is still open.
func (s *openLists) latest(id string) *openList { return s.byID[id] }

// forget drops o from the index by id (it left byDepth).
func (s *openLists) forget(o *openList) {
	if s.byID[o.id] == o {
		delete(s.byID, o.id)
	}
}

// expire drops the lists read at or before request seq.
func (s *openLists) expire(seq int) {
	for d, q := range s.byDepth {
		n := 0
		for n < len(q) && q[n].seq <= seq {
			s.forget(q[n])
			n++
		}
		clear(q[:n])
		s.byDepth[d] = q[n:]
	}
}

// closeBefore removes and hands to closed the lists read before request
// seq at depth d or deeper, except those keep selects (the parent being
// read from, read again; another reader's), which stay.
func (s *openLists) closeBefore(seq, d int, keep func(*openList) bool, closed func(*openList)) {
	for b := openDepth(d); b <= maxContextDepth; b++ {
		q := s.byDepth[b]
		n := 0
		for n < len(q) && q[n].seq < seq {
			n++
		}
		kept := n // the prefix's kept lists move to its end, in order
		for i := n - 1; i >= 0; i-- {
			if o := q[i]; keep(o) {
				kept--
				q[kept] = o
			} else {
				s.forget(o)
				closed(o)
			}
		}
		clear(q[:kept])
		s.byDepth[b] = q[kept:]
	}
}

// move puts o, read again at another depth, among that depth's lists.
func (s *openLists) move(o *openList, depth int) {
	from, to := openDepth(o.depth), openDepth(depth)
	o.depth = depth
	if from == to {
		return
	}
	q := s.byDepth[from]
	i := slices.Index(q, o)
	if i < 0 {
		return // closed or expired: not indexed
	}
	s.byDepth[from] = slices.Delete(q, i, i+1)
	q = s.byDepth[to]
	j, _ := slices.BinarySearchFunc(q, o.seq+1, func(x *openList, seq int) int { return cmp.Compare(x.seq, seq) })
	s.byDepth[to] = slices.Insert(q, j, o)
}

// shallower returns the lists read less than depth levels below a direct
// request, the latest first.
func (s *openLists) shallower(depth int) []*openList {
	var out []*openList
	for b := 0; b < openDepth(depth); b++ {
		out = append(out, s.byDepth[b]...)
	}
	slices.SortStableFunc(out, func(a, b *openList) int { return cmp.Compare(b.seq, a.seq) })
	return out
}

// unstarted returns up to n lists none of whose fields were followed, of
// objects read at most depth levels below a direct request, the latest
// first.
func (s *openLists) unstarted(depth, n int) []*openList {
	var out []*openList
	for b := 0; b <= openDepth(depth); b++ {
		q, found := s.byDepth[b], 0
		for i := len(q) - 1; i >= 0 && found < n; i-- {
			if o := q[i]; len(o.started) == 0 && o.depth <= depth {
				out = append(out, o)
				found++
			}
		}
	}
	slices.SortStableFunc(out, func(a, b *openList) int { return cmp.Compare(b.seq, a.seq) })
	return out[:min(n, len(out))]
}
