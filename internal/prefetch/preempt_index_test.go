package prefetch

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// indexAll indexes every fresh trigger of x, as a hold past maxFreshRefs
// does.
func indexAll(x *triggerIndex) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.indexLocked()
}

// The index finds a trigger while any job holds it, and forgets it, refs
// and all, when the last one lets go: whether its refs were indexed (run)
// or not yet (fresh), or some were and some not.
func TestTriggerIndexHoldsWhileAJobDoes(t *testing.T) {
	for _, index := range []string{"never", "always", "first"} {
		t.Run("index="+index, func(t *testing.T) {
			a, b := node("a", "c", "a.1"), node("b", "c")
			x := newTriggerIndex()
			holds := 0
			hold := func(ts ...*graph.Object) {
				x.hold(ts)
				if holds++; index == "always" || index == "first" && holds == 1 {
					indexAll(x)
				}
			}
			hold(a)
			hold(a, b) // a hub read again, beside another object
			assert.Nil(t, x.overtaken([]string{"a", "b", "z"}), "no held trigger refers to them")
			assert.Equal(t, map[*graph.Object]bool{a: true, b: true}, x.overtaken([]string{"c"}))
			x.release([]*graph.Object{a, b})
			assert.Equal(t, map[*graph.Object]bool{a: true}, x.overtaken([]string{"c", "a.1"}), "the first job still holds a")
			x.release([]*graph.Object{a})
			assert.Nil(t, x.overtaken([]string{"c", "a.1"}))
			hold(b, a)
			x.release([]*graph.Object{b})
			assert.Equal(t, map[*graph.Object]bool{a: true}, x.overtaken([]string{"c"}), "b let go first")
			x.release([]*graph.Object{a})
			assert.Empty(t, x.refer, "nothing is left of released triggers")
			assert.Empty(t, x.held)
			assert.Empty(t, x.fresh)
			assert.Zero(t, x.freshRefs)
		})
	}
}

// Whatever the order of holds, releases and indexing, and however many ids
// a request missed, the index answers as a scan of every held trigger's
// refs would.
func TestTriggerIndexAnswersAsAScan(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	objs := make([]*graph.Object, 40)
	for i := range objs {
		var refs []string
		for range rnd.IntN(4) {
			refs = append(refs, fmt.Sprint("c", rnd.IntN(30)))
		}
		objs[i] = node(fmt.Sprint("o", i), refs...)
	}
	x := newTriggerIndex()
	var jobs [][]*graph.Object // what each job holds
	for step := range 3000 {
		switch op := rnd.IntN(10); {
		case op < 4 || len(jobs) == 0:
			ts := []*graph.Object{objs[rnd.IntN(len(objs))], objs[rnd.IntN(len(objs))]}
			x.hold(ts)
			jobs = append(jobs, ts)
		case op < 8:
			i := rnd.IntN(len(jobs))
			x.release(jobs[i])
			jobs = append(jobs[:i], jobs[i+1:]...)
		default:
			indexAll(x)
		}
		missed := []string{fmt.Sprint("c", rnd.IntN(30))}
		for range rnd.IntN(2) * 12 { // sometimes more ids than are compared one by one
			missed = append(missed, fmt.Sprint("c", rnd.IntN(30)))
		}
		require.Equal(t, scanOvertaken(jobs, missed), x.overtaken(missed), "step %d, missed %v", step, missed)
	}
	for _, ts := range jobs {
		x.release(ts)
	}
	assert.Empty(t, x.refer)
	assert.Empty(t, x.held)
	assert.Empty(t, x.fresh)
}

// scanOvertaken is overtaken done the slow way: every ref of every trigger
// the jobs hold.
func scanOvertaken(jobs [][]*graph.Object, missed []string) map[*graph.Object]bool {
	var over map[*graph.Object]bool
	for _, ts := range jobs {
		for _, t := range ts {
			for _, r := range t.Refs {
				for _, id := range missed {
					if r.ID == id {
						if over == nil {
							over = map[*graph.Object]bool{}
						}
						over[t] = true
					}
				}
			}
		}
	}
	return over
}

// Triggers whose refs pile up past maxFreshRefs unindexed (a queue of hub
// jobs that waits) are indexed by the hold that crosses it; below it, none
// are.
func TestTriggerIndexIndexesWhatPilesUp(t *testing.T) {
	x := newTriggerIndex()
	small := hub("small", 10)
	x.hold([]*graph.Object{small})
	hubs := []*graph.Object{small}
	size := maxFreshRefs / 4
	for i := 0; x.freshRefs+size <= maxFreshRefs; i++ {
		hubs = append(hubs, hub(fmt.Sprint("hub", i), size))
		x.hold(hubs[len(hubs)-1:])
	}
	assert.Empty(t, x.refer, "below the bound, nothing is indexed")
	assert.Equal(t, map[*graph.Object]bool{small: true}, x.overtaken([]string{"small.3"}))
	last := hub("last", size)
	x.hold([]*graph.Object{last})
	assert.Empty(t, x.fresh, "the hold past the bound indexed them all")
	assert.Len(t, x.refer, 10+size*len(hubs))
	assert.Equal(t, map[*graph.Object]bool{small: true, last: true}, x.overtaken([]string{"small.3", fmt.Sprint("last.", size-1)}))
	x.release(append(hubs, last))
	assert.Empty(t, x.refer)
	assert.Empty(t, x.held)
}
