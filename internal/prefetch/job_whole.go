package prefetch

import (
	"errors"
	"math"
	"slices"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// expandWhole handles level d below the roots when its refs are all wanted
// (short, the fields of those that are not, is empty), or, within the
// levels ahead, all those of the fields the application follows: when the
// origin has Expand and the levels below are wanted too, one Expand brings
// them all in one round trip instead of one BatchGet per level. Within the
// levels ahead that is what keeps the application from waiting: a walk
// that reads faster than one level per round trip outruns speculation that
// fetches one level per round trip. It reports whether it did.
func (w *chanceWalk) expandWhole(level []step, cands []candidate, short *fieldIndex, d int) bool {
	s := w.s
	if !s.fetcher.CanExpand() || d >= w.depth || !w.lacks(cands) {
		return false // none to fetch: walk on through what is held
	}
	var b graph.Budget
	if len(short.fields) == 0 {
		b = w.wholeBudget(level, d)
	}
	if ahead, ok := w.windowBudget(level, short, d); ok && (ahead.Depth > b.Depth || !subset(ahead.Fields, b.Fields)) {
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
	if !s.whole.enter(roots, From(w.ctx), b, w.budget) {
		return true // left to the Expand in flight (wholeGate)
	}
	ctx := w.ctx
	for len(roots) > 0 {
		var err error
		w.wait(func() {
			x, e := s.runExpansion(ctx, roots, b)
			if err = e; err == nil {
				_, _ = x.JoinedRoots(w.ctx)
			}
		})
		if err != nil {
			s.whole.leave()
			return !errors.Is(err, errors.ErrUnsupported) // trouble: stop; unsupported: level by level
		}
		var from []string
		roots, from, b = w.nextWhole()
		ctx = WithFrom(w.ctx, from) // the Expand is for the jobs that left its roots
	}
	return true
}

// nextWhole takes from the gate the roots other jobs left while the
// holder's Expand was in flight, and their budget, passing over those
// whose roots are all held now (an Expand from them would most likely
// cost a round trip for nothing, as lacks judges a job's own); nil when
// none are left, and the gate is open.
func (w *chanceWalk) nextWhole() (roots, from []string, b graph.Budget) {
	for {
		roots, from, b = w.s.whole.next(w.s.fetcher.BatchSize())
		if len(roots) == 0 {
			return nil, nil, b
		}
		roots = dedupe(roots)
		if slices.ContainsFunc(roots, func(id string) bool { _, known := w.s.fetcher.Peek(id); return !known }) {
			b.MaxObjects = min(b.MaxObjects, w.budget+len(roots))
			return roots, from, b
		}
	}
}

// lacks reports whether a candidate is not held (nor known missing).
func (w *chanceWalk) lacks(cands []candidate) bool {
	for i := range cands {
		if _, known := w.peek(&cands[i]); !known {
			return true
		}
	}
	return false
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
func (w *chanceWalk) windowBudget(level []step, short *fieldIndex, d int) (graph.Budget, bool) {
	if d > w.ahead {
		return graph.Budget{}, false
	}
	followed := w.s.chooser.Followed(w.near)
	if len(followed) == 0 || slices.ContainsFunc(followed, short.has) ||
		!w.s.continues(level, 1, w.near, followed) {
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
func (w *chanceWalk) wholeBudget(level []step, d int) graph.Budget {
	left := w.depth - d
	deeper := 0
	for deeper < left && w.s.continues(level, deeper+1, w.threshold(d+deeper+1), nil) {
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
func fieldsOf(level []step) []fieldList {
	var out []fieldList
	var index fieldIndex // out's fields
	for _, st := range level {
		for _, f := range listLengths(st.o) {
			if i := index.find(f.field); i >= 0 {
				out[i].longest = max(out[i].longest, f.longest)
			} else {
				index.add(f.field)
				out = append(out, f)
			}
		}
	}
	return out
}

// listLengths returns o's fields, each with the length of its list: its
// first maxLists fields, as the planner considers them.
func listLengths(o *graph.Object) []fieldList {
	var out []fieldList
	for k := 0; k < len(o.Refs); {
		j := runEnd(o.Refs, k)
		i := slices.IndexFunc(out, func(g fieldList) bool { return g.field == o.Refs[k].Field })
		switch {
		case i >= 0:
			out[i].longest += j - k
		case len(out) < maxLists:
			out = append(out, fieldList{field: o.Refs[k].Field, longest: j - k})
		}
		k = j
	}
	return out
}

// continues reports whether, k levels below level, lists of the level's
// types, with the fields each type has there and as long as the level's
// longest, are expected to be read whole: each ref's chance reaches
// threshold. Only fields in only count, unless it is nil.
func (s *Scheduler) continues(level []step, k int, threshold float64, only []string) bool {
	all := fieldsOf(level)
	type key struct {
		typ   string
		depth int
	}
	var keys []key
	has := map[key][]int{} // the fields of each type at each depth, by their index in all
	at := make(map[string]int, len(all))
	for i, f := range all {
		at[f.field] = i
	}
	type keyField struct {
		k key
		i int
	}
	seen := map[keyField]bool{}
	for _, st := range level {
		k := key{st.o.Type, st.depth}
		if _, ok := has[k]; !ok {
			keys = append(keys, k)
			has[k] = nil
		}
		for _, f := range listLengths(st.o) {
			i, ok := at[f.field]
			if ok && (only == nil || slices.Contains(only, f.field)) && !seen[keyField{k, i}] {
				seen[keyField{k, i}] = true
				has[k] = append(has[k], i)
			}
		}
	}
	probe := &graph.Object{}
	var buf []float64
	for _, t := range keys {
		probe.Type, probe.Refs = t.typ, probe.Refs[:0]
		slices.Sort(has[t]) // in all's order
		for _, i := range has[t] {
			for range all[i].longest {
				probe.Refs = append(probe.Refs, graph.Ref{Field: all[i].field})
			}
		}
		buf = s.chooser.Chances(probe, t.depth+k, 0, buf)
		for _, p := range buf {
			if p < threshold {
				return false
			}
		}
	}
	return true
}
