package prefetch

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// branch is one of Knafla's Branch objects: a left and a right child, each
// the start of a chain.
func branch(id string) *graph.Object {
	return &graph.Object{ID: id, Type: "Branch", Refs: []graph.Ref{{Field: "left", ID: id + "l"}, {Field: "right", ID: id + "r"}}}
}

// link is a chain's object: its one ref is next.
func link(id string) *graph.Object {
	return &graph.Object{ID: id, Type: "Normal", Refs: []graph.Ref{{Field: "next", ID: id + "n"}}}
}

// A branch read half the time, passed by at its first offer, is still
// followed the next time it is read: one not-follow is not evidence that
// the field is not followed (seenNotFollowed), and undoing the follow would
// count it as not followed again, so that the field's follows would never
// be counted (Knafla's pages: left and right).
func TestLearnedBranchPassedByOnceIsStillFollowed(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	read := func(o *graph.Object) { l.Read([]*graph.Object{o}, false) }
	for _, b := range []string{"b0", "b1"} { // right twice
		read(branch(b))
		read(link(b + "r"))
		read(link(b + "rn"))
	}
	s := l.stats[edgeKey{0, "Branch", "left"}]
	require.NotNil(t, s, "b0's left was passed by")
	require.Zero(t, s.allFollowed)
	read(branch("b2"))
	read(link("b2l"))  // left, the first time
	read(link("b2ln")) // and on down its chain
	assert.Equal(t, 1, l.Depth("b2l"), "a follow of b2's left")
	assert.Equal(t, 1.0, l.stats[edgeKey{0, "Branch", "left"}].allFollowed)
}
