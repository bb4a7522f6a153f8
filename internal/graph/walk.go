package graph

import "context"

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

// Traversal is a breadth-first walk over an object graph with a budget. It is
// a pure state machine: it says which ids the current level needs (Pending),
// the caller obtains them however it likes (cache, origin, both) and hands
// back what it found (Resolve). It does no I/O and keeps no clock.
//
// Every id is scheduled at most once over the traversal's life, so cycles,
// self references and shared children terminate and nothing is fetched twice.
type Traversal struct {
	budget    Budget
	fields    map[string]struct{} // nil = follow all fields
	seen      map[string]struct{} // every id ever scheduled
	level     int
	pending   []string // ids of the current level, in discovery order
	scheduled int      // len(seen): ids charged against MaxObjects
	missing   []string
}

// NewTraversal starts a traversal at roots (level 0). Duplicate roots are
// scheduled once; roots beyond MaxObjects are dropped.
func NewTraversal(roots []string, b Budget) *Traversal {
	t := &Traversal{budget: b, seen: make(map[string]struct{}, len(roots))}
	if len(b.Fields) > 0 {
		t.fields = make(map[string]struct{}, len(b.Fields))
		for _, f := range b.Fields {
			t.fields[f] = struct{}{}
		}
	}
	for _, id := range roots {
		t.schedule(id)
	}
	return t
}

func (t *Traversal) schedule(id string) {
	if _, ok := t.seen[id]; ok {
		return
	}
	if t.budget.MaxObjects > 0 && t.scheduled >= t.budget.MaxObjects {
		return
	}
	t.seen[id] = struct{}{}
	t.scheduled++
	t.pending = append(t.pending, id)
}

// Done reports whether nothing is left to obtain.
func (t *Traversal) Done() bool { return len(t.pending) == 0 }

// Level is the distance from the roots of the Pending ids.
func (t *Traversal) Level() int { return t.level }

// Pending returns the ids the current level needs, in breadth-first order.
// The slice is owned by the traversal until the next Resolve.
func (t *Traversal) Pending() []string { return t.pending }

// Remaining is how many more ids the traversal may schedule; -1 = no cap.
func (t *Traversal) Remaining() int {
	if t.budget.MaxObjects <= 0 {
		return -1
	}
	return t.budget.MaxObjects - t.scheduled
}

// Missing returns the scheduled ids that Resolve was not given objects for.
func (t *Traversal) Missing() []string { return t.missing }

// Follows reports whether the traversal follows refs in field.
func (t *Traversal) Follows(field string) bool {
	if t.fields == nil {
		return true
	}
	_, ok := t.fields[field]
	return ok
}

// Resolve hands the traversal the objects found for the Pending ids, in any
// order. Objects that were not pending, nil objects and duplicates are
// ignored; pending ids without an object are recorded as missing. It returns
// the accepted objects in Pending order and advances to the next level, whose
// ids are the not-yet-seen refs of the accepted objects.
func (t *Traversal) Resolve(found []*Object) []*Object {
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
	t.pending = nil
	if t.level >= t.budget.Depth {
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
