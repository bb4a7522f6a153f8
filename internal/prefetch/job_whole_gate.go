package prefetch

import (
	"slices"
	"sync"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// wholeGate lets one whole-levels Expand (expandWhole) be in flight at a
// time: jobs of reads close together want the same levels (a query's
// trees), and a second Expand would bring again all that the first is
// bringing below the roots they share. A job that finds one in flight does
// not drop its levels, though: it leaves its roots to the job holding the
// gate, which asks for all that came in meanwhile in one more Expand once
// its own is answered. Dropped, they were the levels of a tree's reader
// that had moved on: W1's trees read breadth first at a 6 ms round trip
// missed on the first child of every list three levels down, a round trip
// each (587 origin round trips for 10 trees against 2 with the depth
// given).
type wholeGate struct {
	mu     sync.Mutex
	busy   bool
	roots  []string     // left by jobs that found the gate busy, first first
	from   []string     // the ids those jobs expand below (From), for whom the Expand is
	budget graph.Budget // theirs, merged
}

// enter reports whether the caller holds the gate now and must run its
// Expand; if not, roots and b were left to the holder, with from, the ids
// the caller's job expands below, up to limit roots waiting (past it, the
// levels are dropped: the next reads ask again).
func (g *wholeGate) enter(roots, from []string, b graph.Budget, limit int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.busy {
		g.busy = true
		return true
	}
	if len(g.roots)+len(roots) > limit {
		return false
	}
	if len(g.roots) == 0 {
		g.budget = b
	} else {
		g.budget = mergeBudgets(g.budget, b)
	}
	g.roots = append(g.roots, roots...)
	g.from = append(g.from, from[:min(len(from), maxGateFrom-len(g.from))]...)
	return false
}

// next hands the holder at most n of the roots left while its Expand was in
// flight (an origin takes at least the fetcher's batch of ids per request),
// their budget and the ids their jobs expand below (all of them, with each
// part of the roots), keeping the gate; with none left it opens the gate
// and returns nil.
func (g *wholeGate) next(n int) (roots, from []string, b graph.Budget) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.roots) == 0 {
		g.busy, g.from, g.budget = false, nil, graph.Budget{}
		return nil, nil, graph.Budget{}
	}
	n = min(n, len(g.roots))
	roots, from, b = slices.Clone(g.roots[:n]), slices.Clone(g.from), g.budget
	g.roots = g.roots[n:]
	if len(g.roots) == 0 {
		g.roots, g.from, g.budget = nil, nil, graph.Budget{}
	}
	return roots, from, b
}

// leave opens the gate and forgets what waited: the holder's Expand failed
// or its job was cancelled (a demand preempted it), and the levels left to
// it are asked for again by the reads that come next.
func (g *wholeGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.busy, g.roots, g.from, g.budget = false, nil, nil, graph.Budget{}
}

// mergeBudgets is a budget covering both a and b: the deeper depth, both
// counts (no cap when either has none) and their fields together (none,
// meaning every field, when either has none).
func mergeBudgets(a, b graph.Budget) graph.Budget {
	m := graph.Budget{Depth: max(a.Depth, b.Depth), MaxObjects: a.MaxObjects + b.MaxObjects}
	if a.MaxObjects == 0 || b.MaxObjects == 0 {
		m.MaxObjects = 0
	}
	if len(a.Fields) == 0 || len(b.Fields) == 0 {
		return m
	}
	m.Fields = slices.Clone(a.Fields)
	for _, f := range b.Fields {
		if !slices.Contains(m.Fields, f) {
			m.Fields = append(m.Fields, f)
		}
	}
	return m
}
