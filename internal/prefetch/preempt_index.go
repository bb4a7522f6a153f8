package prefetch

import (
	"slices"
	"sync"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// triggerIndex keeps, for each id, the triggers of queued and running jobs
// that refer to it, so that a demand miss finds the triggers it overtakes
// by looking up its own ids. Scanning every job's triggers instead costs a
// miss the queue's length times its triggers' refs: with a full queue of
// jobs below hubs, millions of lookups in the request, and misses are
// common exactly when the queue is full (a slow origin). Holding a trigger
// costs a map write per ref once, when its first job is queued, on the
// request's goroutine (a hub: thousands), and as many to release it, even
// for a job that is dropped before it runs. A trigger is indexed by its object, not
// its id, and held once however many jobs hold it (a hub read again and
// again).
type triggerIndex struct {
	mu    sync.Mutex
	refer map[string]referrers  // the held triggers that refer to each id; guarded by mu
	held  map[*graph.Object]int // the jobs that hold each trigger; guarded by mu
}

// referrers are the triggers that refer to one id: most ids have one, held
// without an allocation of its own.
type referrers struct {
	one  *graph.Object
	more []*graph.Object
}

func (rs *referrers) add(t *graph.Object) {
	if rs.one == nil {
		rs.one = t
	} else {
		rs.more = append(rs.more, t)
	}
}

// remove removes one occurrence of t and reports whether none are left.
func (rs *referrers) remove(t *graph.Object) (empty bool) {
	if rs.one == t {
		rs.one = nil
		if n := len(rs.more); n > 0 {
			rs.one, rs.more = rs.more[n-1], rs.more[:n-1]
		}
	} else if i := slices.Index(rs.more, t); i >= 0 {
		rs.more = slices.Delete(rs.more, i, i+1)
	}
	return rs.one == nil
}

func newTriggerIndex() *triggerIndex {
	return &triggerIndex{refer: map[string]referrers{}, held: map[*graph.Object]int{}}
}

// hold indexes ts for a job that was queued with them.
func (x *triggerIndex) hold(ts []*graph.Object) {
	if len(ts) == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, t := range ts {
		if x.held[t]++; x.held[t] > 1 {
			continue
		}
		for _, r := range t.Refs {
			rs := x.refer[r.ID]
			rs.add(t)
			x.refer[r.ID] = rs
		}
	}
}

// release drops ts, which a job held and no longer does; a trigger no job
// holds leaves the index.
func (x *triggerIndex) release(ts []*graph.Object) {
	if len(ts) == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, t := range ts {
		if x.held[t]--; x.held[t] > 0 {
			continue
		}
		delete(x.held, t)
		for _, r := range t.Refs {
			if rs := x.refer[r.ID]; rs.remove(t) {
				delete(x.refer, r.ID)
			} else {
				x.refer[r.ID] = rs
			}
		}
	}
}

// overtaken returns the held triggers that refer to an id of missed, nil if
// none: its cost is missed's length and the triggers it returns.
func (x *triggerIndex) overtaken(missed []string) map[*graph.Object]bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	var over map[*graph.Object]bool
	for _, id := range missed {
		rs, ok := x.refer[id]
		if !ok {
			continue
		}
		if over == nil {
			over = make(map[*graph.Object]bool)
		}
		over[rs.one] = true
		for _, t := range rs.more {
			over[t] = true
		}
	}
	return over
}
