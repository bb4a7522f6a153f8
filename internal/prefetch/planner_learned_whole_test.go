package prefetch

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// fastReader makes a learned planner whose application reads 50 objects in
// a 5 ms round trip: a hundred reads are due within two.
func fastReader() *Learned {
	l := NewLearned(LearnedConfig{})
	l.pace.gap = float64(100 * time.Microsecond)
	return l
}

// fastRTT is fastReader's round trip.
const fastRTT = 5 * time.Millisecond

// A friend list being read, of a field whose lists were read to their end
// (the user's own, one level up), is fetched past the longest run seen:
// having read 4 of it, the reader reads the 13th with chance 4/13 times the
// position's estimate, which the levels ahead fetch.
func TestLearnedListReadToItsEndIsFetchedAheadOfItsReader(t *testing.T) {
	l := fastReader()
	l.Read([]*graph.Object{user("u", 2, "f")}, false, fastRTT)
	f0 := user("f0", 40, "g")
	l.Read([]*graph.Object{f0}, false, fastRTT)
	l.Read([]*graph.Object{user("f1", 0, "")}, false, fastRTT) // u's list read to its end
	for i := range 4 {
		l.Read([]*graph.Object{user(fmt.Sprint("g", i), 0, "")}, false, fastRTT)
	}
	require.Equal(t, 4, l.lists[listKey{"f0", "friends"}].followed)
	c := l.Chances(f0, 1, 0, nil)
	assert.GreaterOrEqual(t, c[12], l.cfg.MinChance, "the 13th friend is due and likely enough")
	assert.Less(t, c[12], c[7], "less likely further down")
	other := user("f9", 40, "h") // a list not being read: the longest run's limit
	assert.Zero(t, l.Chances(other, 1, 0, nil)[12])
}

// Past the reads due within two round trips, only a ref at least
// Threshold likely is fetched: twice the run at most.
func TestLearnedListReadToItsEndBeyondTheDueReads(t *testing.T) {
	l := NewLearned(LearnedConfig{}) // no round trip measured: one read due
	l.Read([]*graph.Object{user("u", 2, "f")}, false, 0)
	f0 := user("f0", 40, "g")
	l.Read([]*graph.Object{f0}, false, 0)
	l.Read([]*graph.Object{user("f1", 0, "")}, false, 0)
	for i := range 4 {
		l.Read([]*graph.Object{user(fmt.Sprint("g", i), 0, "")}, false, 0)
	}
	c := l.Chances(f0, 1, 0, nil)
	for i := 8; i < len(c); i++ {
		assert.Zero(t, c[i], "position %d", i)
	}
}

// Lists the application leaves with refs unread (a view reads a user's
// first three friends, then the next user's) outnumber those it read to
// their end: the list being read is fetched only to the longest run's
// limit.
func TestLearnedListsLeftUnreadAreNotFetchedAhead(t *testing.T) {
	l := fastReader()
	for v := range 3 {
		u := user(fmt.Sprint("u", v), 20, fmt.Sprint("v", v, "f"))
		l.Read([]*graph.Object{u}, false, fastRTT)
		for i := range 3 {
			l.Read([]*graph.Object{user(fmt.Sprint("v", v, "f", i), 0, "")}, false, fastRTT)
		}
	}
	s := l.stats[edgeKey{0, "User", "friends"}]
	assert.Equal(t, 2.0, s.stops, "the first two views' lists, left when the next one was read from")
	assert.Zero(t, s.ends)
	assert.Zero(t, l.Chances(user("u2", 20, "v2f"), 0, 0, nil)[12])
}

// A list whose one unread ref the application cannot read (a deleted
// object, here its last) was not left short; one with two unread was.
func TestLearnedOneUnreadRefIsNotAStop(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	l.Read([]*graph.Object{friendsOf("u", "f0", "f1", "gone")}, false, 0)
	l.Read([]*graph.Object{friendsOf("f0")}, false, 0)
	l.Read([]*graph.Object{friendsOf("f1")}, false, 0)
	l.Read([]*graph.Object{friendsOf("w", "x", "y", "z")}, false, 0) // the next view
	l.Read([]*graph.Object{friendsOf("x")}, false, 0)
	s := l.stats[edgeKey{0, "User", "friends"}]
	assert.Zero(t, s.stops, "u's list: one unread")
	l.Read([]*graph.Object{friendsOf("v", "a", "b")}, false, 0) // and the next
	l.Read([]*graph.Object{friendsOf("a")}, false, 0)
	assert.Equal(t, 1.0, s.stops, "w's list: y and z unread")
	assert.Zero(t, s.ends)
}

// The read that ends a list, when nothing is known yet of its field one
// level down, names the objects the list led to whose lists now borrow its
// evidence: the user's first friend's friends are read next, before a job
// of theirs could fetch them (belowLocked). Once the level below has
// evidence of its own, their own reads' jobs see to it.
func TestLearnedListReadToItsEndNamesTheListsBelow(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	l.Read([]*graph.Object{user("u", 3, "f")}, false, 0)
	l.Read([]*graph.Object{user("f0", 4, "a")}, false, 0)
	l.Read([]*graph.Object{user("f1", 0, "")}, false, 0) // no friends: no list
	got := l.Read([]*graph.Object{user("f2", 4, "c")}, false, 0)
	assert.ElementsMatch(t, []string{"u", "f0"}, got, "f0's list waits; f2 is read, its job expands below it")
	assert.Positive(t, l.Chances(user("f0", 4, "a"), 1, 0, nil)[0], "and it is likely now")

	l.Read([]*graph.Object{user("a0", 0, "")}, false, 0) // f0's list followed: the level below has evidence
	l.Read([]*graph.Object{user("v", 2, "g")}, false, 0)
	l.Read([]*graph.Object{user("g0", 3, "h")}, false, 0)
	assert.NotContains(t, l.Read([]*graph.Object{user("g1", 3, "i")}, false, 0), "g0")
}

// A tree read depth first: its root's list was started while nothing was
// known one level down, so the root's job fetched nothing below its other
// children; the first follow at that depth names the root again, whose
// list has refs unread, for its job to fetch below them (aboveLocked).
func TestLearnedFirstFollowAtADepthNamesTheListsAbove(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	task := func(id string, n int) *graph.Object {
		o := &graph.Object{ID: id, Type: "Task"}
		for i := range n {
			o.Refs = append(o.Refs, graph.Ref{Field: "subtasks", ID: fmt.Sprint(id, ".", i)})
		}
		return o
	}
	l.Read([]*graph.Object{task("t", 3)}, false, 0)
	l.Read([]*graph.Object{task("t.0", 3)}, false, 0)
	assert.Contains(t, l.Read([]*graph.Object{task("t.0.0", 0)}, false, 0), "t", "the first follow one level down")
	assert.NotContains(t, l.Read([]*graph.Object{task("t.0.1", 0)}, false, 0), "t", "not the second")
}
