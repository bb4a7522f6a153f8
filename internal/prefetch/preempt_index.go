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
// common exactly when the queue is full (a slow origin).
//
// Holding a trigger costs the request that queues its job one map write,
// however many refs it has, while the triggers held and not indexed
// (fresh) have at most maxFreshRefs refs between them: a miss compares
// those with its ids instead, in well under a microsecond. Most triggers
// are never indexed: while the queue is short, a job runs and lets go of
// its triggers before others pile up, and indexing them, then removing
// them, would cost a map write per ref twice for lookups that no miss
// needs. Once fresh triggers have more refs (jobs wait in the queue: a
// slow origin; a hub), the request whose hold crossed the bound indexes
// them all, and each trigger's refs are indexed once and removed once,
// when its last job ends. A trigger is held by its object, not its id,
// and once however many jobs hold it (a hub read again and again).
type triggerIndex struct {
	mu    sync.Mutex
	refer map[string]referrers      // the indexed triggers that refer to each id; guarded by mu
	held  map[*graph.Object]holding // guarded by mu
	// fresh are the held triggers not indexed yet, freshRefs their refs;
	// guarded by mu.
	fresh     []*graph.Object
	freshRefs int
}

// holding is a held trigger's: the jobs that hold it, and its place in
// fresh + 1 (0 once indexed).
type holding struct{ jobs, at int }

// maxFreshRefs bounds the refs of held triggers not indexed yet: what a
// miss compares beyond its lookups.
const maxFreshRefs = 1024

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
	return &triggerIndex{refer: map[string]referrers{}, held: map[*graph.Object]holding{}}
}

// hold holds ts for a job that was queued with them.
func (x *triggerIndex) hold(ts []*graph.Object) {
	if len(ts) == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, t := range ts {
		h := x.held[t]
		if h.jobs++; h.jobs == 1 {
			x.fresh = append(x.fresh, t)
			h.at = len(x.fresh)
			x.freshRefs += len(t.Refs)
		}
		x.held[t] = h
	}
	if x.freshRefs > maxFreshRefs { // jobs pile up in the queue
		x.indexLocked()
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
		h := x.held[t]
		if h.jobs--; h.jobs > 0 {
			x.held[t] = h
			continue
		}
		delete(x.held, t)
		if h.at > 0 {
			x.unfreshLocked(h.at - 1)
			continue
		}
		for _, r := range t.Refs {
			if rs := x.refer[r.ID]; rs.remove(t) {
				delete(x.refer, r.ID)
			} else {
				x.refer[r.ID] = rs
			}
		}
	}
}

// unfreshLocked takes fresh[i] out of fresh, the last one taking its place.
func (x *triggerIndex) unfreshLocked(i int) {
	x.freshRefs -= len(x.fresh[i].Refs)
	last := len(x.fresh) - 1
	if i != last {
		m := x.fresh[last]
		x.fresh[i] = m
		h := x.held[m]
		h.at = i + 1
		x.held[m] = h
	}
	x.fresh[last] = nil
	x.fresh = x.fresh[:last]
}

// indexLocked indexes the fresh triggers.
func (x *triggerIndex) indexLocked() {
	for len(x.fresh) > 0 {
		t := x.fresh[len(x.fresh)-1]
		x.unfreshLocked(len(x.fresh) - 1)
		h := x.held[t]
		h.at = 0
		x.held[t] = h
		for _, r := range t.Refs {
			rs := x.refer[r.ID]
			rs.add(t)
			x.refer[r.ID] = rs
		}
	}
}

// overtaken returns the held triggers that refer to an id of missed, nil if
// none: its cost is missed's length, the triggers it returns and the refs
// of the fresh triggers (at most maxFreshRefs), which it compares with
// missed.
func (x *triggerIndex) overtaken(missed []string) map[*graph.Object]bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	var over map[*graph.Object]bool
	add := func(t *graph.Object) {
		if over == nil {
			over = make(map[*graph.Object]bool)
		}
		over[t] = true
	}
	for _, id := range missed {
		if rs, ok := x.refer[id]; ok {
			add(rs.one)
			for _, t := range rs.more {
				add(t)
			}
		}
	}
	var set map[string]bool // missed, when they are too many to compare one by one
	if len(x.fresh) > 0 && len(missed) > 8 {
		set = make(map[string]bool, len(missed))
		for _, id := range missed {
			set[id] = true
		}
	}
	for _, t := range x.fresh {
		if refersTo(t, missed, set) {
			add(t)
		}
	}
	return over
}

// refersTo reports whether t has a ref to an id of missed; set is missed
// as a set, nil to compare them one by one.
func refersTo(t *graph.Object, missed []string, set map[string]bool) bool {
	for i := range t.Refs {
		id := t.Refs[i].ID
		if set != nil {
			if set[id] {
				return true
			}
			continue
		}
		for _, m := range missed {
			if id == m {
				return true
			}
		}
	}
	return false
}
