package graph

// Lookup tells a plan what the sidecar already holds, without I/O. known is
// true when the answer is certain: obj != nil is held, obj == nil is known
// not to exist. known false means the id must be fetched.
type Lookup func(id string) (obj *Object, known bool)

// Step is one level of a plan: what is already held and what must be fetched.
type Step struct {
	Level int
	Held  []*Object
	Fetch []string
	IDs   []string // Held's and Fetch's ids together, in breadth-first order
}

// Plan walks a graph breadth-first through what is held and yields, level by
// level, the ids that still have to be fetched. It is pure: the caller does
// the fetching and hands the result back with Complete. Cached subtrees are
// not fetched again, but their refs are followed to find what lies below.
type Plan struct {
	t    *Traversal
	held []*Object // held objects of the level Step last returned
}

// NewPlan plans the expansion below roots, which are held (level 0). The
// budget's MaxObjects counts fetched levels only: the roots are free.
func NewPlan(roots []*Object, b Budget) *Plan {
	ids := make([]string, len(roots))
	for i, o := range roots {
		ids[i] = o.ID
	}
	if b.MaxObjects > 0 {
		b.MaxObjects += len(ids)
	}
	p := &Plan{t: NewTraversal(ids, b)}
	p.t.Resolve(roots)
	return p
}

// NewPlanIDs plans a walk from root ids that may or may not be held; the
// budget's MaxObjects includes the roots.
func NewPlanIDs(roots []string, b Budget) *Plan {
	return &Plan{t: NewTraversal(roots, b)}
}

// Step returns the next level with held objects and ids to fetch; ok is false
// when the walk is complete. Levels that have nothing to fetch are still
// returned (with an empty Fetch) so that a caller streaming the walk sees
// every level in order. Call Complete before the next Step.
func (p *Plan) Step(have Lookup) (s Step, ok bool) {
	if p.t.Done() {
		return Step{}, false
	}
	s.Level = p.t.Level()
	pending := p.t.Pending()
	s.IDs = make([]string, 0, len(pending))
	for _, id := range pending {
		o, known := have(id)
		switch {
		case known && o != nil:
			s.Held = append(s.Held, o)
			s.IDs = append(s.IDs, id)
		case !known:
			s.Fetch = append(s.Fetch, id)
			s.IDs = append(s.IDs, id)
		}
	}
	p.held = s.Held
	return s, true
}

// Complete resolves the level Step returned with the fetched objects and
// returns the level's objects in breadth-first order.
func (p *Plan) Complete(fetched []*Object) []*Object {
	all := append(p.held, fetched...)
	p.held = nil
	return p.t.Resolve(all)
}

// Remaining is how many more ids the plan may schedule; -1 = no cap.
func (p *Plan) Remaining() int { return p.t.Remaining() }

// Missing lists ids that were neither held nor fetched.
func (p *Plan) Missing() []string { return p.t.Missing() }

// Rest is the budget of an Expand call that continues the plan from the
// level st with b's rules: the remaining depth and objects, the same fields.
// Its roots are st.IDs, the held ones walked through (known ids).
func (p *Plan) Rest(st Step, b Budget) Budget {
	sub := Budget{Depth: b.Depth - st.Level, Fields: b.Fields}
	if r := p.Remaining(); r >= 0 {
		sub.MaxObjects = r + len(st.IDs)
	}
	return sub
}
