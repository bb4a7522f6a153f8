package prefetch

import (
	"fmt"
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
	read := reader(l)
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

// outRef is an object with three lists of one ref each, the entries of
// pages a reader queues (Knafla's Out-Ref).
func outRef(id string) *graph.Object {
	o := &graph.Object{ID: id, Type: "OutRef"}
	for i := 1; i <= 3; i++ {
		o.Refs = append(o.Refs, graph.Ref{Field: fmt.Sprint("out", i), ID: fmt.Sprint(id, "e", i)})
	}
	return o
}

// A reader that queues the refs it meets and reads them first in first out
// leaves lists and comes back to them: a list passed by counts as not
// followed at once (closeLocked), but a read that follows it later, within
// the horizon, takes that back and is a follow.
func TestLearnedListPassedByAndReadLaterIsFollowed(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	read := reader(l)
	read(outRef("o"))
	read(link("oe1")) // the first queued page
	read(link("oe1n"))
	read(link("p")) // another walk's start: o's second and third lists are passed by
	read(link("pn"))
	out2 := l.stats[edgeKey{0, "OutRef", "out2"}]
	require.NotNil(t, out2)
	require.Equal(t, [2]float64{0, 1}, [2]float64{out2.allFollowed, out2.allOffered}, "passed by")
	read(link("oe2")) // the reader comes back to o's second list
	read(link("oe2n"))
	assert.Equal(t, 1, l.Depth("oe2"), "a follow of o's list")
	assert.Equal(t, [2]float64{1, 1}, [2]float64{out2.allFollowed, out2.allOffered}, "followed, once")
	out3 := l.stats[edgeKey{0, "OutRef", "out3"}]
	assert.Equal(t, [2]float64{0, 1}, [2]float64{out3.allFollowed, out3.allOffered}, "the third list is still passed by")
}

// A list passed by is come back to only within the horizon: beyond it a
// read of its ref is a direct request, and the not-follow stands.
func TestLearnedListPassedByIsForgottenAtTheHorizon(t *testing.T) {
	l := NewLearned(LearnedConfig{Horizon: 8})
	read := reader(l)
	read(outRef("o"))
	read(link("oe1"))
	read(link("p"))
	read(link("pn"))
	for i := range 8 {
		read(&graph.Object{ID: fmt.Sprint("x", i), Type: "Normal"})
	}
	read(link("oe2"))
	assert.Zero(t, l.Depth("oe2"), "a direct request")
	out2 := l.stats[edgeKey{0, "OutRef", "out2"}]
	assert.Equal(t, [2]float64{0, 1}, [2]float64{out2.allFollowed, out2.allOffered})
	for id, c := range l.offers {
		assert.Empty(t, c.passed, "%s: nothing is kept past the horizon", id)
	}
}

// A list passed by is not come back to through a field seen not followed
// beyond chance: the first friend of a friend viewed before, read after
// friends' friends were passed by dozens of times, is a profile view of its
// own, asked for directly.
func TestLearnedListPassedByOfAFieldNotFollowedStaysPassed(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	read := reader(l)
	read(user("x", 2, "xf"))
	read(user("xf0", 8, "a"))
	read(user("xf1", 8, "b"))
	read(user("y", 1, "yf"))
	read(user("yf0", 0, "")) // a follow at depth 0: xf0's and xf1's lists are passed by
	s := l.stats[edgeKey{1, "User", "friends"}]
	require.Equal(t, [2]float64{0, 16}, [2]float64{s.allFollowed, s.allOffered})
	read(user("a0", 2, "af")) // xf0's first friend
	assert.Zero(t, l.Depth("a0"), "a direct request")
	assert.Equal(t, [2]float64{0, 16}, [2]float64{s.allFollowed, s.allOffered}, "still passed by")
}

// A list passed by is come back to in list order only, as one pending is:
// a read far down it, its first refs unread, is asked for by other means.
func TestLearnedListPassedByIsComeBackToInOrder(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	read := reader(l)
	q := &graph.Object{ID: "q", Type: "Queue", Refs: []graph.Ref{{Field: "next", ID: "qn"}}}
	for i := range 4 {
		q.Refs = append(q.Refs, graph.Ref{Field: "items", ID: fmt.Sprint("i", i)})
	}
	read(q)
	read(link("qn"))
	read(link("p")) // another walk's start: q's items are passed by
	read(link("pn"))
	require.NotNil(t, l.offers["i2"])
	require.NotEmpty(t, l.offers["i2"].passed)
	read(link("i2")) // the third item, the first two unread
	assert.Zero(t, l.Depth("i2"), "not a follow of q's items")
}

// A list passed by that pointed back at an object read before it is not
// come back to: a user viewed again is asked for directly, not reached
// through the author of a post read in the view before.
func TestLearnedListPassedByPointingBackIsNotComeBackTo(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	read := reader(l)
	u := &graph.Object{ID: "u", Type: "User", Refs: []graph.Ref{{Field: "posts", ID: "p"}}}
	read(u)
	read(&graph.Object{ID: "p", Type: "Post", Refs: []graph.Ref{{Field: "author", ID: "u"}}})
	read(link("v")) // another view: p's author list is passed by
	read(link("vn"))
	require.NotNil(t, l.offers["u"])
	require.NotEmpty(t, l.offers["u"].passed)
	read(u) // u viewed again
	assert.Zero(t, l.Depth("u"), "a direct request")
	assert.Zero(t, l.stats[edgeKey{1, "Post", "author"}].allFollowed)
}
