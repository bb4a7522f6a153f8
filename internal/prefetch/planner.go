package prefetch

import (
	"fmt"
	"time"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// Hint overrides the planner's settings for one request; nil fields keep them.
type Hint struct {
	Depth      *int
	MaxObjects *int
	Fields     []string
}

// Given reports whether the hint overrides anything.
func (h Hint) Given() bool { return h.Depth != nil || h.MaxObjects != nil || len(h.Fields) > 0 }

// apply returns b with what the hint overrides.
func (h Hint) apply(b graph.Budget) graph.Budget {
	if h.Depth != nil {
		b.Depth = *h.Depth
	}
	if h.MaxObjects != nil {
		b.MaxObjects = *h.MaxObjects
	}
	if len(h.Fields) > 0 {
		b.Fields = h.Fields
	}
	return b
}

// Planner decides how far to expand speculatively below demanded objects.
type Planner interface {
	// Budget returns the expansion below roots; Depth 0 means none.
	Budget(roots []*graph.Object, h Hint) graph.Budget
}

// Chooser is a planner that chooses object by object: it says how likely
// each ref of an object is to be read, and the scheduler fetches, most
// likely first, what is likely enough (Learned).
type Chooser interface {
	Planner
	// Threshold is the least probability worth a speculative fetch.
	Threshold() float64
	// Limits bound one expansion: levels below its roots, objects fetched.
	Limits() (depth, objects int)
	// Ahead is, given what one origin round trip costs, how many levels
	// below a read object must be on their way now for the application not
	// to wait, and the least probability worth a fetch within them (at most
	// Threshold); 0 levels when nothing is known.
	Ahead(rtt time.Duration) (levels int, threshold float64)
	// Distance is how many objects the application reads in one origin
	// round trip of rtt (Knafla's object distance); 1 when nothing is
	// known.
	Distance(rtt time.Duration) int
	// Followed returns the fields, sorted, that the application is seen to
	// follow with at least probability threshold, at some type and depth
	// and position in a list.
	Followed(threshold float64) []string
	// Depth is how far below an object requested directly id was read.
	Depth(id string) int
	// Chances appends to out[:0] the probability of each ref of o being
	// read, given that o is read depth levels below a direct request, in
	// ref order; a ref whose probability is below least may be given 0
	// (the caller takes none of those).
	Chances(o *graph.Object, depth int, least float64, out []float64) []float64
	// ReadAt learns from the objects answered to one request at time at,
	// which waited for the origin or not, rtt being what a demand round
	// trip to the origin costs now (0: none measured yet), and returns the
	// ids of objects whose ref lists it read from. Requests come in the
	// order they were answered, each once.
	ReadAt(at time.Time, objs []*graph.Object, waited bool, rtt time.Duration) (parents []string)
}

// Static is the planner with fixed settings: db4o's prefetchDepth and
// prefetchObjectCount. The zero value prefetches nothing.
type Static struct {
	Depth      int      // reference levels below a demanded object
	MaxObjects int      // objects one expansion may fetch; 0 = no cap
	Fields     []string // ref fields to follow; empty = all
}

// Validate reports the first broken setting.
func (s Static) Validate() error {
	switch {
	case s.Depth < 0:
		return fmt.Errorf("prefetch depth %d: must not be negative", s.Depth)
	case s.MaxObjects < 0:
		return fmt.Errorf("prefetch max objects %d: must not be negative", s.MaxObjects)
	}
	return nil
}

// Budget implements Planner.
func (s Static) Budget(_ []*graph.Object, h Hint) graph.Budget {
	return h.apply(graph.Budget{Depth: s.Depth, MaxObjects: s.MaxObjects, Fields: s.Fields})
}
