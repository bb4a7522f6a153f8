package prefetch

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"

	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// choose hands what a request read to the chooser and queues an expansion
// below every object it read, and below the objects whose lists it read
// from: their next refs became likelier. It queues none when there are no
// such lists and no object read has a ref the expansion would take (see
// offers): most reads of a walk are of leaves, and most reads of objects
// nobody walks from have nothing likely below them, and a job that
// finds nothing still costs a worker its setup and a walk of the level.
func (s *Scheduler) choose(ctx context.Context, a *fetch.Answer) {
	objs := make([]*graph.Object, 0, len(a.Results))
	waited := false // for the origin: a miss, or a join of a fetch in flight
	for _, r := range a.Results {
		objs = append(objs, r.Object)
		waited = waited || r.Status == fetch.StatusMiss || r.Status == fetch.StatusJoined
	}
	parents := s.chooser.Read(objs, waited, s.win.RoundTrip())
	if s.cfg.Mode == ModeOff || len(parents) == 0 && !s.offers(objs) {
		return
	}
	roots := objs
	for _, id := range parents {
		if o, known := s.fetcher.Peek(id); known && o != nil {
			roots = append(roots, o)
		}
	}
	if len(roots) == 0 {
		return
	}
	_, max := s.chooser.Limits()
	if c := s.tierCap(); c > 0 && c < max {
		max = c
	}
	s.enqueue(job{roots: roots, triggers: objs, budget: graph.Budget{MaxObjects: max}, chance: true, client: ClientOf(ctx)})
}

// offers reports whether a chance expansion below objs would take a ref of
// theirs: one whose chance reaches the least threshold of a level (see
// chanceWalk.threshold). Without one, the expansion's first level is empty
// and it ends there.
func (s *Scheduler) offers(objs []*graph.Object) bool {
	if !slices.ContainsFunc(objs, func(o *graph.Object) bool { return len(o.Refs) > 0 }) {
		return false
	}
	_, least := s.chooser.Ahead(s.win.RoundTrip())
	least = min(least, s.chooser.Threshold())
	var buf []float64
	for _, o := range objs {
		if len(o.Refs) == 0 {
			continue
		}
		buf = s.chooser.Chances(o, s.chooser.Depth(o.ID), buf)
		if slices.ContainsFunc(buf, func(p float64) bool { return p >= least }) {
			return true
		}
	}
	return false
}

// candidate is an id a chance expansion may fetch and how likely it is read.
type candidate struct {
	id     string
	chance float64
	depth  int
}

// chanceWalk is one job of the chooser under way.
type chanceWalk struct {
	s      *Scheduler
	ctx    context.Context // the job's: cancelled when a demand preempts it or the scheduler closes
	ahead  int             // levels the application reads in one round trip (Chooser.Ahead)
	near   float64         // the least chance fetched within them
	far    float64         // and beyond them (Chooser.Threshold)
	depth  int             // the deepest level, below the roots
	budget int             // objects
	reach  *graph.Reach
}

func (s *Scheduler) newChanceWalk(ctx context.Context, j job) *chanceWalk {
	w := &chanceWalk{s: s, ctx: ctx, far: s.chooser.Threshold(), budget: j.budget.MaxObjects,
		reach: graph.NewReach(graph.Budget{MaxObjects: j.budget.MaxObjects + len(j.roots)}, len(j.roots))}
	w.ahead, w.near = s.chooser.Ahead(s.win.RoundTrip())
	w.depth, _ = s.chooser.Limits()
	return w
}

// threshold is the least chance worth a fetch level levels below the roots.
func (w *chanceWalk) threshold(level int) float64 {
	if level <= w.ahead {
		return w.near
	}
	return w.far
}

// expandChances runs a job of the chooser: level by level below the roots,
// it fetches the refs whose chance of being read (the product of the
// chances along the way from a root the application read) reaches the
// chooser's threshold for their level (lower within the levels the
// application reads in one round trip: Chooser.Ahead), most likely first,
// until the job's object budget or the chooser's depth is spent. Held
// objects cost nothing and are walked through; every id is considered once
// (graph.Reach), so cycles end.
func (s *Scheduler) expandChances(ctx context.Context, j job) {
	w := s.newChanceWalk(ctx, j)
	level := make([]*graph.Object, 0, len(j.roots))
	chance := make(map[string]float64, len(j.roots))
	depthOf := make(map[string]int, len(j.roots)) // how far below a direct request
	for _, o := range j.roots {
		if w.reach.Admit(o.ID) {
			level = append(level, o)
			chance[o.ID] = 1
			depthOf[o.ID] = s.chooser.Depth(o.ID)
		}
	}
	var buf []float64
	idle := 0 // levels in a row with nothing to fetch
	for d := 1; d <= w.depth && len(level) > 0 && ctx.Err() == nil; d++ {
		var cands []candidate
		var short []string
		cands, short, buf = s.candidates(level, chance, depthOf, w.threshold(d), buf)
		if len(cands) > 0 && w.expandWhole(level, depthOf, cands, short, d) {
			return
		}
		next, nextDepth, fetch, held := w.admit(cands)
		if idle = idle + 1; len(fetch) > 0 {
			idle = 0
		} else if idle >= maxIdleLevels && d >= w.ahead {
			return
		}
		got, err := s.speculate(ctx, fetch)
		if err != nil {
			return // origin trouble or shutdown: speculation just stops
		}
		level, chance, depthOf = append(held, got...), next, nextDepth
	}
}

// admit takes the candidates of a level, most likely first (the object
// budget goes to them), and returns the chance and depth of each admitted,
// those to fetch and those held.
func (w *chanceWalk) admit(cands []candidate) (chance map[string]float64, depthOf map[string]int,
	fetch []string, held []*graph.Object) {
	slices.SortStableFunc(cands, func(a, b candidate) int { return cmp.Compare(b.chance, a.chance) })
	chance = make(map[string]float64, len(cands))
	depthOf = make(map[string]int, len(cands))
	for _, c := range cands {
		if !w.reach.Admit(c.id) {
			continue // seen before, or the budget is spent
		}
		chance[c.id], depthOf[c.id] = c.chance, c.depth
		if o, known := w.s.fetcher.Peek(c.id); known {
			if o != nil {
				held = append(held, o)
			}
			continue
		}
		fetch = append(fetch, c.id)
	}
	return chance, depthOf, fetch, held
}

// maxIdleLevels is how many levels in a row with nothing to fetch a job
// walks through beyond the levels the application reads in one round trip
// (within them it walks to their end, so that each read's job keeps them
// on their way): what lies further below held objects is for the jobs of
// the reads that reach them. Without it, every read below a query's trees
// would walk all of them again once they are held (W1: 155 objects per
// read, on the cores the application shares).
const maxIdleLevels = 2

// candidates returns the refs of level whose chance reaches threshold, and
// the fields of those that do not (none: the level is wanted whole); buf is
// reused.
func (s *Scheduler) candidates(level []*graph.Object, chance map[string]float64, depthOf map[string]int,
	threshold float64, buf []float64) (cands []candidate, short []string, _ []float64) {
	for _, o := range level {
		buf = s.chooser.Chances(o, depthOf[o.ID], buf)
		for i, r := range o.Refs {
			if p := chance[o.ID] * buf[i]; p >= threshold {
				cands = append(cands, candidate{r.ID, p, depthOf[o.ID] + 1})
			} else if !slices.Contains(short, r.Field) {
				short = append(short, r.Field)
			}
		}
	}
	return cands, short, buf
}

// expandWhole handles level d below the roots when its refs are all wanted
// (short, the fields of those that are not, is empty), or, within the
// levels ahead, all those of the fields the application follows: when the
// origin has Expand and the levels below are wanted too, one Expand brings
// them all in one round trip instead of one BatchGet per level. Within the
// levels ahead that is what keeps the application from waiting: a walk
// that reads faster than one level per round trip outruns speculation that
// fetches one level per round trip. It reports whether it did.
func (w *chanceWalk) expandWhole(level []*graph.Object, depthOf map[string]int, cands []candidate, short []string, d int) bool {
	s := w.s
	if !s.fetcher.CanExpand() || d >= w.depth || !slices.ContainsFunc(cands, func(c candidate) bool {
		_, known := s.fetcher.Peek(c.id)
		return !known
	}) {
		return false // none to fetch: walk on through what is held
	}
	var b graph.Budget
	if len(short) == 0 {
		b = w.wholeBudget(level, depthOf, d)
	}
	if ahead, ok := w.windowBudget(level, depthOf, short, d); ok && (ahead.Depth > b.Depth || !subset(ahead.Fields, b.Fields)) {
		// The levels ahead go deeper than the level's lists are expected
		// whole, or through fields the level does not have (a chain's next
		// leads to a branch's left and right).
		b = ahead
	}
	if b.Depth == 0 {
		return false
	}
	// Every candidate is a root, held ones too (the Expand walks through
	// them without fetching them again): below them the levels are as much
	// wanted as below the others, and one round trip is cheaper than a job
	// per level.
	roots := make([]string, 0, len(cands))
	for _, c := range cands {
		roots = append(roots, c.id)
	}
	roots = dedupe(roots)
	// One such Expand at a time: jobs of reads close together want the same
	// levels (a query's trees), and a second Expand would bring again all
	// that the first is bringing below the roots they share. The job that
	// finds one in flight leaves the levels to it; a read it does not cover
	// schedules another job.
	if !s.whole.CompareAndSwap(false, true) {
		return true
	}
	defer s.whole.Store(false)
	x, err := s.runExpansion(w.ctx, roots, b)
	if err != nil {
		return !errors.Is(err, errors.ErrUnsupported) // trouble: stop; unsupported: level by level
	}
	_, _ = x.JoinedRoots(w.ctx)
	return true
}

// windowBudget is the Expand below level d's candidates when level d is
// one of the levels ahead: as many levels again below them, since the
// application reads that many while the Expand is on its way and the next
// one starts from where this one ends. It follows the fields the chooser
// has seen followed at the least chance fetched there (a page's next, left
// and right), and fetches at most as many objects as those levels hold at
// that chance (a path that halves at every level holds no more). Not when
// a followed field has refs on the level not wanted (short: a hub's list,
// read only in part), nor when the level's types are not read on below
// through the followed fields (continues). Refs of other fields are left
// out (an out-ref never followed).
func (w *chanceWalk) windowBudget(level []*graph.Object, depthOf map[string]int, short []string, d int) (graph.Budget, bool) {
	if d > w.ahead {
		return graph.Budget{}, false
	}
	followed := w.s.chooser.Followed(w.near)
	if len(followed) == 0 || slices.ContainsFunc(short, func(f string) bool { return slices.Contains(followed, f) }) ||
		!w.s.continues(level, depthOf, 1, w.near, followed) {
		return graph.Budget{}, false // none followed would mean all
	}
	b := graph.Budget{Depth: min(w.ahead, w.depth-d), MaxObjects: min(w.budget, int(math.Ceil(float64(w.ahead+1)/w.near))),
		Fields: followed}
	return b, true
}

// subset reports whether every field of a is in b.
func subset(a, b []string) bool {
	for _, f := range a {
		if !slices.Contains(b, f) {
			return false
		}
	}
	return true
}

// wholeBudget is the Expand below level d's candidates, beyond the levels
// ahead, for as many levels as the level's lists are expected to go on
// being read whole (a tree read to its leaves), following the level's
// fields; Depth 0 when none.
func (w *chanceWalk) wholeBudget(level []*graph.Object, depthOf map[string]int, d int) graph.Budget {
	left := w.depth - d
	deeper := 0
	for deeper < left && w.s.continues(level, depthOf, deeper+1, w.threshold(d+deeper+1), nil) {
		deeper++
	}
	b := graph.Budget{Depth: deeper, MaxObjects: w.budget}
	if deeper == 0 {
		return b
	}
	for _, f := range fieldsOf(level) {
		b.Fields = append(b.Fields, f.field)
	}
	return b
}

// fieldList is one field of a level's objects and its longest list.
type fieldList struct {
	field   string
	longest int
}

// fieldsOf returns the fields of level's objects, each with its longest list.
func fieldsOf(level []*graph.Object) []fieldList {
	var out []fieldList
	for _, o := range level {
		for _, f := range listLengths(o) {
			i := slices.IndexFunc(out, func(g fieldList) bool { return g.field == f.field })
			if i < 0 {
				out = append(out, f)
			} else {
				out[i].longest = max(out[i].longest, f.longest)
			}
		}
	}
	return out
}

// listLengths returns o's fields, each with the length of its list.
func listLengths(o *graph.Object) []fieldList {
	var out []fieldList
	for _, r := range o.Refs {
		i := slices.IndexFunc(out, func(g fieldList) bool { return g.field == r.Field })
		if i < 0 {
			out = append(out, fieldList{field: r.Field, longest: 1})
		} else {
			out[i].longest++
		}
	}
	return out
}

// continues reports whether, k levels below level, lists of the level's
// types, with the fields each type has there and as long as the level's
// longest, are expected to be read whole: each ref's chance reaches
// threshold. Only fields in only count, unless it is nil.
func (s *Scheduler) continues(level []*graph.Object, depthOf map[string]int, k int, threshold float64, only []string) bool {
	all := fieldsOf(level)
	type key struct {
		typ   string
		depth int
	}
	var keys []key
	has := map[key]map[string]bool{} // the fields of each type at each depth
	for _, o := range level {
		k := key{o.Type, depthOf[o.ID]}
		if has[k] == nil {
			keys = append(keys, k)
			has[k] = map[string]bool{}
		}
		for _, r := range o.Refs {
			has[k][r.Field] = only == nil || slices.Contains(only, r.Field)
		}
	}
	probe := &graph.Object{}
	var buf []float64
	for _, t := range keys {
		probe.Type, probe.Refs = t.typ, probe.Refs[:0]
		for _, f := range all {
			for i := 0; has[t][f.field] && i < f.longest; i++ {
				probe.Refs = append(probe.Refs, graph.Ref{Field: f.field})
			}
		}
		buf = s.chooser.Chances(probe, t.depth+k, buf)
		for _, p := range buf {
			if p < threshold {
				return false
			}
		}
	}
	return true
}
