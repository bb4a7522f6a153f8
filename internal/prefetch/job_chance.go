package prefetch

import (
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
func (s *Scheduler) expandChances(j job) {
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
	for d := 1; d <= depth && len(level) > 0 && s.ctx.Err() == nil; d++ {
		var cands []candidate
		for _, o := range level {
			buf = s.chooser.Chances(o, depthOf[o.ID], buf)
			for i, r := range o.Refs {
				if p := chance[o.ID] * buf[i]; p >= threshold {
					cands = append(cands, candidate{r.ID, p, depthOf[o.ID] + 1})
				}
			}
		}
		// Most likely first: the object budget goes to them.
		slices.SortStableFunc(cands, func(a, b candidate) int {
			switch {
			case a.chance > b.chance:
				return -1
			case a.chance < b.chance:
				return 1
			}
			return 0
		})
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
		got, err := s.speculate(fetch)
		if err != nil {
			return // origin trouble or shutdown: speculation just stops
		}
		level, chance, depthOf = append(held, got...), next, nextDepth
	}
}
