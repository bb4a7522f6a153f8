package prefetch

import (
	"slices"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// Chances implements Chooser: the probability of each ref of o being read,
// given that o is read at depth, in ref order; refs beyond what
// applications were seen to read from one list get 0.
func (l *Learned) Chances(o *graph.Object, depth int, out []float64) []float64 {
	out = out[:0]
	l.mu.RLock()
	defer l.mu.RUnlock()
	var lists []listChances // one per field: objects have few
	for _, r := range o.Refs {
		i := slices.IndexFunc(lists, func(c listChances) bool { return c.field == r.Field })
		if i < 0 {
			i = len(lists)
			lists = append(lists, l.listLocked(edgeKey{min(depth, maxContextDepth), o.Type, r.Field}))
		}
		out = append(out, lists[i].next())
	}
	return out
}

// listChances gives the chances of one list's refs in order.
type listChances struct {
	field string
	s     *fieldStats // nil: nothing known
	prior float64     // the field's estimate, or Prior when nothing is known
	run   int         // the longest run read from one list
	pos   int         // of the next ref
}

// minAhead is the last position a list with a follow is fetched to.
const minAhead = 4

// priorWeight is how many observations the level above counts for.
const priorWeight = 2

func (l *Learned) listLocked(k edgeKey) listChances {
	c := listChances{field: k.field, s: l.stats[k], prior: l.cfg.Prior}
	if c.s == nil {
		c.s = l.treeLikeLocked(k)
	}
	if c.s != nil {
		c.prior = (c.s.allFollowed + priorWeight*l.cfg.Prior) / (c.s.allOffered + priorWeight)
		c.run = c.s.maxRun
	}
	if k.depth > 0 {
		// How far a list is read is borrowed from the level above when a
		// list there was read to its end: the friends of friends are read
		// as far as the friends were.
		if up := l.stats[edgeKey{k.depth - 1, k.typ, k.field}]; up != nil && up.ended {
			c.run = max(c.run, up.maxRun)
		}
	}
	return c
}

// next is the chance of the next ref. A position's estimate borrows
// strength from its field's. A list is read from its start, a few at a
// time: nothing beyond half again the longest run read from one list of
// this field so far, so that a list read to its end is fetched ahead in
// growing steps while a hub's thousands of refs cost a few; and at least
// minAhead positions, since the application asks for the next ref as soon
// as it has the last one, before any speculation it caused can start.
func (c *listChances) next() float64 {
	pos := c.pos
	c.pos++
	switch {
	case c.s == nil:
		return c.prior
	case pos > max(c.run+c.run/2, minAhead):
		return 0
	}
	b := bucket(pos)
	return (c.s.followed[b] + priorWeight*c.prior) / (c.s.offered[b] + priorWeight)
}
