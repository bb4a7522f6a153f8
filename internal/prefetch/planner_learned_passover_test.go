package prefetch

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// A walk down a random branch reads the k-th child of the object it just
// read and none before it: those k refs are decided not followed at once,
// as the read's own offer is, and not only when the horizon passes them,
// while the walks that took the first branch count as follows at once.
func TestLearnedReadPastRefsPassesThemOver(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	l.Read([]*graph.Object{user("u", 6, "f")}, false, 0)
	l.Read([]*graph.Object{user("f3", 2, "g")}, false, 0)
	assert.Zero(t, l.Depth("f3"), "read past f0-f2: not a follow")
	s := l.stats[edgeKey{0, "User", "friends"}]
	require.NotNil(t, s)
	for pos := range 4 {
		assert.Equal(t, 1.0, s.offered[bucket(pos)], "position %d decided", pos)
	}
	assert.Zero(t, s.allFollowed)
	assert.Equal(t, 4.0, s.allOffered, "f4 and f5 still wait")
}

// Read in order after all, a ref passed over is a follow: the decision is
// taken back (claimLocked), as for a list closed.
func TestLearnedRefPassedOverThenReadInOrderIsFollowed(t *testing.T) {
	l := NewLearned(LearnedConfig{Prior: 0.5})
	l.Read([]*graph.Object{user("u", 6, "f")}, false, 0)
	l.Read([]*graph.Object{user("f1", 0, "")}, false, 0) // passes f0 over
	l.Read([]*graph.Object{user("f0", 0, "")}, false, 0)
	assert.Equal(t, 1, l.Depth("f0"), "f0 follows u's list")
	s := l.stats[edgeKey{0, "User", "friends"}]
	assert.Equal(t, 1.0, s.followed[0])
	assert.Equal(t, 1.0, s.offered[0], "the not-follow taken back")
}

// One request's reads are a set: a batch whose order is not the list's
// passes over nothing that it reads, and follows the list. Passed over
// read by read, the 30 refs before f30 would count as not followed before
// f0 came, too many for the field to be taken as followed (seenNotFollowed).
func TestLearnedBatchOutOfOrderPassesOverNothingItReads(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	l.Read([]*graph.Object{user("u", 40, "f")}, false, 0)
	batch := []*graph.Object{user("f30", 0, "")}
	for i := range 30 {
		batch = append(batch, user(fmt.Sprint("f", i), 0, ""))
	}
	l.Read(batch, false, 0)
	s := l.stats[edgeKey{0, "User", "friends"}]
	assert.Equal(t, 30.0, s.allFollowed, "f0-f29 in order")
	assert.Equal(t, 31.0, s.allOffered, "and f30, read past them first, not followed; f31-f39 wait")
}
