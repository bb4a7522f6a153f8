package graph

import (
	"context"
	"errors"
)

// Budget bounds one traversal.
type Budget struct {
	// Depth is the number of reference levels below the roots; 0 = roots only.
	Depth int
	// MaxObjects caps the ids the traversal schedules, roots included, so a
	// traversal never asks for more than this many objects; 0 = no cap.
	MaxObjects int
	// Fields restricts the ref fields followed; empty = all.
	Fields []string
}

// maxSizeHint bounds SizeHint: a budget of many objects may be spent on a
// few, and a set sized for all of them would cost its memory up front.
const maxSizeHint = 4096

// SizeHint is how many ids the sets of a traversal with budget b from n
// roots should be sized for, so that they do not grow (by rehashing) while
// it runs: MaxObjects, up to a few thousand, and at least n.
func (b Budget) SizeHint(n int) int {
	if b.MaxObjects <= 0 {
		return n
	}
	return max(n, min(b.MaxObjects, maxSizeHint))
}

// Reach holds the one set of rules by which a budgeted traversal admits
// ids: each id once over the traversal's life (so cycles, self references
// and shared children terminate and nothing is fetched twice), at most
// MaxObjects ids in all, and only refs in the budget's fields. Traversal
// uses it, and so does anything that walks the same graph incrementally
// (an Expand stream read as it arrives; Ledger).
type Reach struct {
	rules
	seen map[string]struct{} // every id ever admitted
}

// rules are Reach's and Ledger's rules, less their set of ids.
type rules struct {
	budget    Budget
	fields    map[string]struct{} // nil = follow all fields
	scheduled int                 // ids admitted: charged against MaxObjects
}

func newRules(b Budget) rules {
	r := rules{budget: b}
	if len(b.Fields) > 0 {
		r.fields = make(map[string]struct{}, len(b.Fields))
		for _, f := range b.Fields {
			r.fields[f] = struct{}{}
		}
	}
	return r
}

// NewReach starts an empty reach for budget b; sizeHint sizes its set.
func NewReach(b Budget, sizeHint int) *Reach {
	return &Reach{rules: newRules(b), seen: make(map[string]struct{}, sizeHint)}
}

// Admit schedules id and reports true, unless it was admitted before or
// the budget's MaxObjects is spent. Once the budget is checked, one insert
// tells a new id from a seen one (the set grows only by a new id): every
// id of a walk passes here, most of them new.
func (r *Reach) Admit(id string) bool {
	if r.spent() {
		return false
	}
	n := len(r.seen)
	r.seen[id] = struct{}{}
	if len(r.seen) == n {
		return false
	}
	r.scheduled++
	return true
}

// Has reports whether id was admitted.
func (r *Reach) Has(id string) bool {
	_, ok := r.seen[id]
	return ok
}

// spent reports whether MaxObjects ids were admitted.
func (r *rules) spent() bool {
	return r.budget.MaxObjects > 0 && r.scheduled >= r.budget.MaxObjects
}

// Follows reports whether refs in field are followed.
func (r *rules) Follows(field string) bool {
	if r.fields == nil {
		return true
	}
	_, ok := r.fields[field]
	return ok
}

// Remaining is how many more ids may be admitted; -1 = no cap.
func (r *rules) Remaining() int {
	if r.budget.MaxObjects <= 0 {
		return -1
	}
	return r.budget.MaxObjects - r.scheduled
}

// Expands reports whether objects found at level have refs to follow.
func (r *rules) Expands(level int) bool { return level < r.budget.Depth }

// Traversal is a breadth-first walk over an object graph with a budget. It is
// a pure state machine: it says which ids the current level needs (Pending),
// the caller obtains them however it likes (cache, origin, both) and hands
// back what it found (Resolve). It does no I/O and keeps no clock. Which ids
// it schedules is Reach's rule.
type Traversal struct {
	reach   *Reach
	level   int
	pending []string // ids of the current level, in discovery order
	missing []string
}

// NewTraversal starts a traversal at roots (level 0). Duplicate roots are
// scheduled once; roots beyond MaxObjects are dropped.
func NewTraversal(roots []string, b Budget) *Traversal {
	t := &Traversal{reach: NewReach(b, b.SizeHint(len(roots)))}
	for _, id := range roots {
		t.schedule(id)
	}
	return t
}

func (t *Traversal) schedule(id string) {
	if t.reach.Admit(id) {
		t.pending = append(t.pending, id)
	}
}

// Done reports whether nothing is left to obtain.
func (t *Traversal) Done() bool { return len(t.pending) == 0 }

// Level is the distance from the roots of the Pending ids.
func (t *Traversal) Level() int { return t.level }

// Pending returns the ids the current level needs, in breadth-first order.
// The slice is owned by the traversal until the next Resolve.
func (t *Traversal) Pending() []string { return t.pending }

// Remaining is how many more ids the traversal may schedule; -1 = no cap.
func (t *Traversal) Remaining() int { return t.reach.Remaining() }

// Missing returns the scheduled ids that Resolve was not given objects for.
func (t *Traversal) Missing() []string { return t.missing }

// Follows reports whether the traversal follows refs in field.
func (t *Traversal) Follows(field string) bool { return t.reach.Follows(field) }

// Resolve hands the traversal the objects found for the Pending ids, in any
// order. Objects that were not pending, nil objects and duplicates are
// ignored; pending ids without an object are recorded as missing. It returns
// the accepted objects in Pending order and advances to the next level, whose
// ids are the not-yet-seen refs of the accepted objects.
func (t *Traversal) Resolve(found []*Object) []*Object {
	accepted := t.inOrder(found)
	if accepted == nil {
		accepted = t.match(found)
	}
	t.pending = nil
	if !t.reach.Expands(t.level) {
		return accepted
	}
	t.level++
	for _, o := range accepted {
		for _, r := range o.Refs {
			if t.Follows(r.Field) {
				t.schedule(r.ID)
			}
		}
	}
	return accepted
}

// inOrder returns a copy of found if it holds exactly the Pending objects in
// Pending order (as a caller that looked each id up in turn hands them
// back), and nil otherwise: then match sorts them out.
func (t *Traversal) inOrder(found []*Object) []*Object {
	if len(found) != len(t.pending) {
		return nil
	}
	for i, o := range found {
		if o == nil || o.ID != t.pending[i] {
			return nil
		}
	}
	return append([]*Object(nil), found...)
}

// match returns the first object found for each Pending id, in Pending
// order, and records the ids without one as missing.
func (t *Traversal) match(found []*Object) []*Object {
	byID := make(map[string]*Object, len(found))
	for _, o := range found {
		if o != nil {
			if _, dup := byID[o.ID]; !dup {
				byID[o.ID] = o
			}
		}
	}
	accepted := make([]*Object, 0, len(t.pending))
	for _, id := range t.pending {
		if o, ok := byID[id]; ok {
			accepted = append(accepted, o)
		} else {
			t.missing = append(t.missing, id)
		}
	}
	return accepted
}

// ErrStop ends a walk early without an error: a visit or receive function
// returns it when it has all it asked for.
var ErrStop = errors.New("graph: walk complete")

// FetchFunc obtains the objects it has among ids; absent ids are missing.
type FetchFunc func(ctx context.Context, ids []string) ([]*Object, error)

// VisitFunc receives each object of a walk with its level, in breadth-first
// order. Returning an error stops the walk.
type VisitFunc func(level int, o *Object) error

// Walk drives a Traversal to the end, one fetch call per level.
func Walk(ctx context.Context, roots []string, b Budget, fetch FetchFunc, visit VisitFunc) error {
	t := NewTraversal(roots, b)
	for !t.Done() {
		if err := ctx.Err(); err != nil {
			return err
		}
		level := t.Level()
		found, err := fetch(ctx, t.Pending())
		if err != nil {
			return err
		}
		for _, o := range t.Resolve(found) {
			if err := visit(level, o); err != nil {
				return err
			}
		}
	}
	return nil
}
