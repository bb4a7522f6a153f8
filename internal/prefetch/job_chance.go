package prefetch

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// candidate is an id a chance expansion may fetch and how likely it is read.
type candidate struct {
	id     string
	chance float64
	depth  int
}

// expandChances runs a job of the chooser: level by level below the roots,
// it fetches the refs whose chance of being read (the product of the
// chances along the way from a root the application read) reaches the
// chooser's threshold, most likely first, until the job's object budget or
// the chooser's depth is spent. Held objects cost nothing and are walked
// through; every id is considered once (graph.Reach), so cycles end.
func (s *Scheduler) expandChances(ctx context.Context, j job) {
	threshold := s.chooser.Threshold()
	depth, _ := s.chooser.Limits()
	reach := graph.NewReach(graph.Budget{MaxObjects: j.budget.MaxObjects + len(j.roots)}, len(j.roots))
	level := make([]*graph.Object, 0, len(j.roots))
	chance := make(map[string]float64, len(j.roots))
	depthOf := make(map[string]int, len(j.roots)) // how far below a direct request
	for _, o := range j.roots {
		if reach.Admit(o.ID) {
			level = append(level, o)
			chance[o.ID] = 1
			depthOf[o.ID] = s.chooser.Depth(o.ID)
		}
	}
	var buf []float64
	idle := 0 // levels in a row with nothing to fetch
	for d := 1; d <= depth && len(level) > 0 && ctx.Err() == nil; d++ {
		var cands []candidate
		var whole bool
		cands, whole, buf = s.candidates(level, chance, depthOf, threshold, buf)
		if whole && len(cands) > 0 && s.expandWhole(ctx, level, depthOf, cands, depth-d, j.budget.MaxObjects) {
			return
		}
		// Most likely first: the object budget goes to them.
		slices.SortStableFunc(cands, func(a, b candidate) int { return cmp.Compare(b.chance, a.chance) })
		next := make(map[string]float64, len(cands))
		nextDepth := make(map[string]int, len(cands))
		var fetch []string
		var held []*graph.Object
		for _, c := range cands {
			if !reach.Admit(c.id) {
				continue // seen before, or the budget is spent
			}
			next[c.id], nextDepth[c.id] = c.chance, c.depth
			if o, known := s.fetcher.Peek(c.id); known {
				if o != nil {
					held = append(held, o)
				}
				continue
			}
			fetch = append(fetch, c.id)
		}
		if idle = idle + 1; len(fetch) > 0 {
			idle = 0
		} else if idle == maxIdleLevels {
			return
		}
		got, err := s.speculate(ctx, fetch)
		if err != nil {
			return // origin trouble or shutdown: speculation just stops
		}
		level, chance, depthOf = append(held, got...), next, nextDepth
	}
}

// maxIdleLevels is how many levels in a row with nothing to fetch a job
// walks through: what lies further below held objects is for the jobs of
// the reads that reach them. Without it, every read below a query's trees
// would walk all of them again once they are held (W1: 155 objects per
// read, on the cores the application shares).
const maxIdleLevels = 2

// candidates returns the refs of level whose chance reaches threshold, and
// whether every ref of the level does; buf is reused.
func (s *Scheduler) candidates(level []*graph.Object, chance map[string]float64, depthOf map[string]int,
	threshold float64, buf []float64) (cands []candidate, whole bool, _ []float64) {
	whole = true
	for _, o := range level {
		buf = s.chooser.Chances(o, depthOf[o.ID], buf)
		for i, r := range o.Refs {
			if p := chance[o.ID] * buf[i]; p >= threshold {
				cands = append(cands, candidate{r.ID, p, depthOf[o.ID] + 1})
			} else {
				whole = false
			}
		}
	}
	return cands, whole, buf
}

// expandWhole handles a level whose refs are all wanted, below objects read
// the way the chooser expects whole lists to go on being read (a tree read
// to its leaves): when the origin has Expand and the levels below are
// expected whole too, one Expand brings them all in one round trip instead
// of one BatchGet per level. It reports whether it did.
func (s *Scheduler) expandWhole(ctx context.Context, level []*graph.Object, depthOf map[string]int, cands []candidate, left, budget int) bool {
	if !s.fetcher.CanExpand() || left < 1 || !slices.ContainsFunc(cands, func(c candidate) bool {
		_, known := s.fetcher.Peek(c.id)
		return !known
	}) {
		return false // none to fetch: walk on through what is held
	}
	fields := map[string]bool{}
	longest := 0
	for _, o := range level {
		n := map[string]int{}
		for _, r := range o.Refs {
			fields[r.Field] = true
			n[r.Field]++
			longest = max(longest, n[r.Field])
		}
	}
	// How many levels below the candidates go on whole, if their objects
	// are like this level's (the same types, lists as long).
	deeper := 0
	for deeper < left && s.continues(level, depthOf, fields, deeper+1, longest) {
		deeper++
	}
	if deeper == 0 {
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
	b := graph.Budget{Depth: deeper, MaxObjects: budget}
	for f := range fields {
		b.Fields = append(b.Fields, f)
	}
	// One such Expand at a time: jobs of reads close together want the same
	// levels (a query's trees), and a second Expand would bring again all
	// that the first is bringing below the roots they share. The job that
	// finds one in flight leaves the levels to it; a read it does not cover
	// schedules another job.
	if !s.whole.CompareAndSwap(false, true) {
		return true
	}
	defer s.whole.Store(false)
	x, err := s.runExpansion(ctx, roots, b)
	if err != nil {
		return !errors.Is(err, errors.ErrUnsupported) // trouble: stop; unsupported: level by level
	}
	_, _ = x.JoinedRoots(ctx)
	return true
}

// continues reports whether, k levels below level, lists of the level's
// types and fields, as long as longest, are expected to be read whole.
func (s *Scheduler) continues(level []*graph.Object, depthOf map[string]int, fields map[string]bool, k, longest int) bool {
	threshold := s.chooser.Threshold()
	probe := &graph.Object{}
	var buf []float64
	type key struct {
		typ   string
		depth int
	}
	seen := map[key]bool{}
	for _, o := range level {
		if k := (key{o.Type, depthOf[o.ID]}); seen[k] {
			continue
		} else {
			seen[k] = true
		}
		probe.Type, probe.Refs = o.Type, probe.Refs[:0]
		for f := range fields {
			for range longest {
				probe.Refs = append(probe.Refs, graph.Ref{Field: f})
			}
		}
		buf = s.chooser.Chances(probe, depthOf[o.ID]+k, buf)
		for _, p := range buf {
			if p < threshold {
				return false
			}
		}
	}
	return true
}
