package prefetch

import (
	"cmp"
	"context"
	"iter"
	"slices"
	"time"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// learn hands r to the chooser and queues an expansion below every object
// it read, and below the objects whose lists it read from: their next refs
// became likelier. It queues none when there are no such lists and no
// object read has a ref the expansion would take (see offers): most reads
// of a walk are of leaves, and most reads of objects nobody walks from
// have nothing likely below them, and a job that finds nothing still costs
// a worker its setup and a walk of the level.
func (s *Scheduler) learn(r reading) {
	objs := r.objs
	parents := s.chooser.ReadAt(r.at, objs, r.waited, s.win.RoundTrip())
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
	s.enqueueChance(job{roots: roots, triggers: objs, budget: graph.Budget{MaxObjects: max}, chance: true, client: ClientOf(r.ctx)})
}

// maxMergedRoots bounds the roots of a chance job that later reads'
// jobs are folded into (enqueueChance).
const maxMergedRoots = 1024

// enqueueChance queues a chance job, or folds it into its client's chance
// job still queued, which then runs as the newest: its roots are the
// union's, its triggers too. A read's job is scheduled every read, and a
// worker's job, with its levels' round trips, takes as long as tens of
// reads: queued one by one, newest first, the jobs of a list's reads pile
// up, and the one that asked for the list's next refs (movedLocked) is
// buried under the reads' after it until the application has read past
// them (friends of friends at 5 ms: jobs waited 250 ms, and a friend's
// list of 155 waited for the origin at each of its last 30 refs). Folded,
// each client has one chance job waiting, with every root read since a
// worker last took one.
func (s *Scheduler) enqueueChance(j job) {
	s.enqueueOr(j, func(old *job) bool {
		if !old.chance || old.client != j.client || len(old.roots)+len(j.roots) > maxMergedRoots {
			return false
		}
		old.roots = append(old.roots, j.roots...)
		old.triggers = append(old.triggers, j.triggers...)
		old.budget.MaxObjects = max(old.budget.MaxObjects, j.budget.MaxObjects)
		old.queued = time.Now()
		return true
	})
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
		buf = s.chooser.Chances(o, s.chooser.Depth(o.ID), least, buf)
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
	// peeked: the fetcher's Peek of id was taken this level (expandWhole),
	// and said known, and held if not nil.
	peeked, known bool
	held          *graph.Object
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
	held   int             // held objects of a level walked through (admit)
	reach  *graph.Reach
	waited time.Duration // for the origin: not choosing (Metrics.Choosing)
}

// wait runs fetch, an origin call of the walk's, and adds its time to waited.
func (w *chanceWalk) wait(fetch func()) {
	began := w.s.now()
	fetch()
	w.waited += w.s.now().Sub(began)
}

func (s *Scheduler) newChanceWalk(ctx context.Context, j job) *chanceWalk {
	w := &chanceWalk{s: s, ctx: ctx, far: s.chooser.Threshold(), budget: j.budget.MaxObjects,
		reach: graph.NewReach(graph.Budget{MaxObjects: j.budget.MaxObjects + len(j.roots)}, len(j.roots))}
	rtt := s.win.RoundTrip()
	w.ahead, w.near = s.chooser.Ahead(rtt)
	w.held = max(minWalkHeld, 2*s.chooser.Distance(rtt))
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
	began := s.now()
	w := s.newChanceWalk(ctx, j)
	defer func() { s.cfg.Metrics.Choosing(max(s.now().Sub(began)-w.waited, 0)) }()
	level := make([]step, 0, len(j.roots))
	for _, o := range j.roots {
		if w.reach.Admit(o.ID) {
			level = append(level, step{o: o, chance: 1, depth: s.chooser.Depth(o.ID)})
		}
	}
	var (
		buf   []float64
		cands []candidate
		short fieldIndex // the fields of the refs not fetched
		next  []step     // the level below, reusing the one above's slice
	)
	idle := 0 // levels in a row with nothing to fetch
	for d := 1; d <= w.depth && len(level) > 0 && ctx.Err() == nil; d++ {
		short.reset()
		cands, buf = s.candidates(level, w.threshold(d), cands[:0], &short, buf)
		if len(cands) > 0 && w.expandWhole(level, cands, &short, d) {
			return
		}
		var fetch []string
		var due map[string]candidate
		next, fetch, due = w.admit(cands, next[:0])
		if len(next) > 0 {
			w.s.cfg.Held(w.ctx, heldOf(next)) // what admit found held
		}
		if idle = idle + 1; len(fetch) > 0 {
			idle = 0
		} else if idle >= maxIdleLevels && d >= w.ahead {
			return
		}
		var got []*graph.Object
		var err error
		w.wait(func() { got, err = s.speculate(ctx, fetch) })
		if err != nil {
			return // origin trouble or shutdown: speculation just stops
		}
		for _, o := range got {
			c := due[o.ID]
			next = append(next, step{o: o, chance: c.chance, depth: c.depth})
		}
		level, next = next, level
	}
}

// heldOf is the objects of steps.
func heldOf(steps []step) iter.Seq[*graph.Object] {
	return func(yield func(*graph.Object) bool) {
		for _, st := range steps {
			if !yield(st.o) {
				return
			}
		}
	}
}

// step is an object a chance expansion reached, with the chance that the
// application reads it and how far below a direct request it would.
type step struct {
	o      *graph.Object
	chance float64
	depth  int
}

// admit takes the candidates of a level, most likely first (the object
// budget goes to them), and appends the w.held likeliest of those held to
// next; it returns the ids to fetch, in that order, and their candidates by
// id (nil if none).
//
// A level's held objects beyond w.held are not walked through: the
// application reads about Chooser.Distance objects in a round trip, and the
// jobs of its next reads walk from nearer them. Every read's job walked
// through all of them: a friend's list of hundreds held, each with a list
// of its own to estimate, for every friend of it read (W5's friends of
// friends: 380 to 480 objects walked a job; walking through at most 64 a
// level cut the planner's time there by a third to a half,
// docs/benchmark-history.md, "Thirteenth session"). What is fetched below
// this level is walked through whole.
func (w *chanceWalk) admit(cands []candidate, next []step) (_ []step, fetch []string, due map[string]candidate) {
	slices.SortStableFunc(cands, func(a, b candidate) int { return cmp.Compare(b.chance, a.chance) })
	held := 0
	for i := range cands {
		c := &cands[i]
		if !w.reach.Admit(c.id) {
			continue // seen before, or the budget is spent
		}
		if o, known := w.peek(c); known {
			if o != nil && held < w.held {
				held++
				next = append(next, step{o: o, chance: c.chance, depth: c.depth})
			}
			continue
		}
		if due == nil {
			due = make(map[string]candidate)
		}
		due[c.id] = *c
		fetch = append(fetch, c.id)
	}
	return next, fetch, due
}

// peek is the fetcher's Peek of c's id, taken once a level: a level whose
// candidates are all held is peeked through by expandWhole first.
func (w *chanceWalk) peek(c *candidate) (*graph.Object, bool) {
	if !c.peeked {
		c.held, c.known = w.s.fetcher.Peek(c.id)
		c.peeked = true
	}
	return c.held, c.known
}

// minWalkHeld is the fewest held objects of a level a chance job walks
// through (admit); more when the application reads more than half as many
// in a round trip.
const minWalkHeld = 64

// maxIdleLevels is how many levels in a row with nothing to fetch a job
// walks through beyond the levels the application reads in one round trip
// (within them it walks to their end, so that each read's job keeps them
// on their way): what lies further below held objects is for the jobs of
// the reads that reach them. Without it, every read below a query's trees
// would walk all of them again once they are held (W1: 155 objects per
// read, on the cores the application shares).
const maxIdleLevels = 2

// candidates appends to cands the refs of level whose chance reaches
// threshold, and to short the fields of those that do not (none: the
// level is wanted whole); buf is reused.
func (s *Scheduler) candidates(level []step, threshold float64, cands []candidate, short *fieldIndex,
	buf []float64) ([]candidate, []float64) {
	for _, st := range level {
		last := -1 // the ref whose field was last found short: a field's refs usually come together
		if st.chance < threshold {
			// No ref's chance, a fraction of st's, can reach threshold:
			// every field of st is short, and its chances are not worth
			// estimating (a level of friends of friends, each with hundreds
			// of refs, whose own chances only reached the levels ahead's
			// threshold, walked again beyond them by the next read's job).
			for i := range st.o.Refs {
				if r := &st.o.Refs[i]; last < 0 || !same(r.Field, st.o.Refs[last].Field) {
					if last = i; !short.has(r.Field) {
						short.add(r.Field)
					}
				}
			}
			continue
		}
		buf = s.chooser.Chances(st.o, st.depth, threshold/st.chance, buf)
		for i := range st.o.Refs {
			r := &st.o.Refs[i]
			if p := st.chance * buf[i]; p >= threshold {
				cands = append(cands, candidate{id: r.ID, chance: p, depth: st.depth + 1})
			} else if last < 0 || !same(r.Field, st.o.Refs[last].Field) {
				if last = i; !short.has(r.Field) {
					short.add(r.Field)
				}
			}
		}
	}
	return cands, buf
}
