package prefetch

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// task is a Task whose subtasks are id.0 to id.(n-1).
func task(id string, n int) *graph.Object {
	o := &graph.Object{ID: id, Type: "Task"}
	for i := range n {
		o.Refs = append(o.Refs, graph.Ref{Field: "subtasks", ID: fmt.Sprint(id, ".", i)})
	}
	return o
}

// readTask reads t's subtasks one by one, in list order.
func readTask(l *Learned, t *graph.Object) {
	for _, r := range t.Refs {
		l.Read([]*graph.Object{{ID: r.ID, Type: "Task"}}, false, 0)
	}
}

// readOthers makes n direct requests of objects without refs.
func readOthers(l *Learned, n int) {
	for i := range n {
		l.Read([]*graph.Object{{ID: fmt.Sprint("other-", i), Type: "Other"}}, false, 0)
	}
}

// A query's results are gone through one after another, each for longer
// than the horizon: the later results' lists wait for their reader, and
// their first reads are follows, not direct requests. Counted as not
// followed at the horizon, they made the field look unread and each later
// result's reads start walks of their own (W1's task trees).
func TestLearnedQueryResultsWaitForTheirReader(t *testing.T) {
	const horizon = 8
	l := NewLearned(LearnedConfig{Horizon: horizon})
	results := []*graph.Object{task("r0", 3), task("r1", 3), task("r2", 3)}
	l.Read(results, false, 0) // the query
	for i, r := range results {
		var id string
		for _, ref := range r.Refs {
			id = ref.ID
			l.Read([]*graph.Object{task(id, 1)}, false, 0)
		}
		assert.Equal(t, 1, l.Depth(id), "result %d's subtasks are read below the query", i)
		for range 3 * horizon { // and on below its last subtask, longer than the horizon
			id += ".0"
			l.Read([]*graph.Object{task(id, 1)}, false, 0)
		}
		s := l.stats[edgeKey{0, "Task", "subtasks"}]
		require.NotNil(t, s, "result %d", i)
		assert.Equal(t, float64(3*(i+1)), s.allFollowed, "result %d: its subtasks are follows", i)
		assert.Equal(t, s.allFollowed, s.allOffered, "result %d: no list of the query's counted as not followed", i)
	}
}

// An object read alone has no query to wait for: its list not read within
// the horizon counts as not followed, as before. A query's other results
// wait only while the reader goes on reading (not for one that read a
// result and went elsewhere), and only as long as maxRenewals horizons.
func TestLearnedListsNotReadWithinTheHorizonCount(t *testing.T) {
	const horizon = 4
	t.Run("read alone", func(t *testing.T) {
		l := NewLearned(LearnedConfig{Horizon: horizon})
		l.Read([]*graph.Object{task("r0", 3)}, false, 0)
		readOthers(l, 2*horizon)
		s := l.stats[edgeKey{0, "Task", "subtasks"}]
		require.NotNil(t, s)
		assert.Equal(t, [2]float64{0, 3}, [2]float64{s.allFollowed, s.allOffered})
	})
	t.Run("the reader went elsewhere", func(t *testing.T) {
		l := NewLearned(LearnedConfig{Horizon: horizon})
		l.Read([]*graph.Object{task("r0", 3), task("r1", 3)}, false, 0)
		readTask(l, task("r0", 3))
		readOthers(l, activeWalk+3*(horizon+1)) // direct requests: walks of their own
		s := l.stats[edgeKey{0, "Task", "subtasks"}]
		require.NotNil(t, s)
		assert.Equal(t, [2]float64{3, 6}, [2]float64{s.allFollowed, s.allOffered}, "r1's list counted as not followed")
		assert.Less(t, l.request, maxRenewals*(horizon+1), "before the renewals ran out")
	})
	t.Run("a query's result never read", func(t *testing.T) {
		l := NewLearned(LearnedConfig{Horizon: horizon})
		l.Read([]*graph.Object{task("r0", 1), task("r1", 3)}, false, 0)
		id := "r0"
		readChain := func(n int) { // r0's walk goes on down a chain, each read a follow
			for range n {
				id += ".0"
				l.Read([]*graph.Object{task(id, 1)}, false, 0)
			}
		}
		readChain(20 * (horizon + 1)) // 20 horizons
		s := l.stats[edgeKey{0, "Task", "subtasks"}]
		require.NotNil(t, s)
		assert.Equal(t, [2]float64{1, 1}, [2]float64{s.allFollowed, s.allOffered}, "r1's list still waits")
		readChain(20 * (horizon + 1)) // past maxRenewals horizons
		assert.Equal(t, [2]float64{1, 4}, [2]float64{s.allFollowed, s.allOffered}, "r1's list counted as not followed")
		assert.Zero(t, l.renewed, "no renewed offer left in the ring")
	})
}

// What the learner remembers is bounded by the offers it was made, not by
// the requests its horizon spans: reads of objects with long lists, more
// than maxLiveOffers refs within the horizon, leave at most maxLiveOffers
// offers, and those pushed out count as not followed, as at the horizon.
func TestLearnedOffersAreBoundedByCount(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	const reads, refs = 400, offersPerList // 102,400 offers, within one horizon
	for i := range reads {
		l.Read([]*graph.Object{task(fmt.Sprint("t", i), refs)}, false, 0)
		require.LessOrEqual(t, l.ring.len(), maxLiveOffers, "read %d", i)
	}
	require.Less(t, reads, l.cfg.Horizon, "all within the horizon")
	assert.LessOrEqual(t, len(l.offers), maxLiveOffers)
	s := l.stats[edgeKey{0, "Task", "subtasks"}]
	require.NotNil(t, s)
	assert.Equal(t, float64(reads*refs-maxLiveOffers), s.allOffered, "every offer pushed out decided")
	assert.Zero(t, s.allFollowed)
	for d, q := range l.open.byDepth {
		assert.LessOrEqual(t, len(q), maxLiveOffers/refs+1, "open lists at depth %d: those with offers left", d)
	}
}

// The lists being read are bounded like the offers: requests that each
// follow hundreds of lists, more than maxLiveOffers within the horizon,
// leave at most maxLiveOffers remembered, the least recently followed
// forgotten first.
func TestLearnedListRunsAreBoundedByCount(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	const batches, width = 200, 500 // 100,000 lists followed within 400 requests
	for b := range batches {
		parents := make([]*graph.Object, width)
		children := make([]*graph.Object, width)
		for i := range parents {
			parents[i] = task(fmt.Sprint("p", b, "-", i), 1)
			children[i] = &graph.Object{ID: parents[i].Refs[0].ID, Type: "Task"}
		}
		l.Read(parents, false, 0)
		l.Read(children, false, 0) // each follows its parent's list
		require.LessOrEqual(t, len(l.lists), maxLiveOffers+width, "batch %d", b)
	}
	require.Less(t, 2*batches, l.cfg.Horizon, "all within the horizon")
	last := task(fmt.Sprint("p", batches-1, "-", width-1), 1)
	assert.NotNil(t, l.lists[listKey{last.ID, "subtasks"}], "the list followed last is remembered")
	assert.Greater(t, len(l.lists), width, "more than the last request's lists are remembered")
}

// A query's result followed after its offers were renewed closes, as any
// first follow does, the lists read before the query at its depth, not
// those read since: a renewal moves the offer in the ring, not the read
// of its list.
func TestLearnedRenewedOfferKeepsItsListsRead(t *testing.T) {
	const horizon = 64
	l := NewLearned(LearnedConfig{Horizon: horizon})
	l.Read([]*graph.Object{task("r0", 1), task("r1", 1)}, false, 0) // the query
	id := "r0"
	readChain := func(n int) { // r0's reader goes on down a chain, each read a follow
		for range n {
			id += ".0"
			l.Read([]*graph.Object{task(id, 1)}, false, 0)
		}
	}
	readChain(18)
	l.Read([]*graph.Object{task("x", 1)}, false, 0) // read directly at request 20, after the query
	readChain(48)                                   // to request 68: r1's offer renewed at 66
	require.NotEmpty(t, l.pendingOf("r1.0"), "r1's list waits for its reader")
	require.NotEmpty(t, l.pendingOf("x.0"), "x's list is open")
	l.Read([]*graph.Object{task("r1.0", 0)}, false, 0)
	assert.Equal(t, 1, l.Depth("r1.0"), "a follow of r1's list")
	assert.NotEmpty(t, l.pendingOf("x.0"), "x's list, read after the query, is not passed by")
}
