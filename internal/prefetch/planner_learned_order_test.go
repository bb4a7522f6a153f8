package prefetch

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// friendsOf makes a User whose friends are ids, in list order.
func friendsOf(id string, ids ...string) *graph.Object {
	o := &graph.Object{ID: id, Type: "User"}
	for _, f := range ids {
		o.Refs = append(o.Refs, graph.Ref{Field: "friends", ID: f})
	}
	return o
}

// A profile view of a user who sits a few places past where the last view
// stopped reading a friend list is not a follow of that list, even when
// the refs in between were offered before by another list (a hub's, never
// read that far): they were not read, so the view passed them by. The
// refs passed are counted when the read comes.
func TestLearnedReadPastUnreadRefsIsDirect(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	l.Read([]*graph.Object{friendsOf("hub", "x0", "x1", "x2", "x3")}, false, 0) // offers the x first
	l.Read([]*graph.Object{friendsOf("u", "f0", "f1", "f2", "x0", "x1", "x2", "x3", "v")}, false, 0)
	for i := range 3 {
		l.Read([]*graph.Object{friendsOf(fmt.Sprint("f", i))}, false, 0)
	}
	require.Equal(t, 1, l.Depth("f2"), "the view read u's first friends")
	assert.Empty(t, l.Read([]*graph.Object{friendsOf("v", "w")}, false, 0), "no list was read from")
	assert.Zero(t, l.Depth("v"), "a direct request: four friends of u passed by unread")
	assert.Equal(t, 3, l.lists[listKey{"u", "friends"}].followed)
}

// A reader that cannot read one ref of a list (a deleted object) still
// follows the list past it.
func TestLearnedReadPastOneUnreadRefFollows(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	l.Read([]*graph.Object{friendsOf("u", "f0", "f1", "gone", "f2")}, false, 0)
	for i := range 3 {
		l.Read([]*graph.Object{friendsOf(fmt.Sprint("f", i))}, false, 0)
	}
	assert.Equal(t, 1, l.Depth("f2"))
	assert.Equal(t, 3, l.lists[listKey{"u", "friends"}].followed)
}

// A user offered by the list of a view before, a ref past where that view
// stopped, and first in the friend list of the user viewed now, whose posts
// the application just read, is read from the list it is reading now.
func TestLearnedFollowIsOfTheListReadLast(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	l.Read([]*graph.Object{friendsOf("u1", "a", "b", "c", "x")}, false, 0)
	l.Read([]*graph.Object{friendsOf("a")}, false, 0)
	l.Read([]*graph.Object{friendsOf("b")}, false, 0)
	u2 := friendsOf("u2", "x")
	u2.Refs = append([]graph.Ref{{Field: "posts", ID: "p"}}, u2.Refs...)
	l.Read([]*graph.Object{u2}, false, 0)
	require.Zero(t, l.Depth("u2"))
	l.Read([]*graph.Object{{ID: "p", Type: "Post"}}, false, 0)
	assert.Equal(t, []string{"u2"}, l.Read([]*graph.Object{friendsOf("x")}, false, 0), "x follows u2's list")
	assert.Equal(t, 2, l.lists[listKey{"u1", "friends"}].followed, "not u1's")
	assert.NotNil(t, l.lists[listKey{"u2", "friends"}])
}

// A user read as a friend in one view and then viewed itself has its lists
// read at the view's depth: a read of its first post is a follow of a
// view's posts, one level below a direct request.
func TestLearnedReadAgainMovesItsLists(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	l.Read([]*graph.Object{friendsOf("u", "v")}, false, 0)
	v := friendsOf("v", "w")
	v.Refs = append([]graph.Ref{{Field: "posts", ID: "p"}}, v.Refs...)
	l.Read([]*graph.Object{v}, false, 0)
	require.Equal(t, 1, l.Depth("v"), "read as u's friend")
	l.Read([]*graph.Object{{ID: "other", Type: "User"}}, false, 0)
	l.Read([]*graph.Object{v}, false, 0) // viewed
	require.Zero(t, l.Depth("v"))
	l.Read([]*graph.Object{{ID: "p", Type: "Post"}}, false, 0)
	assert.Equal(t, 1, l.Depth("p"))
	assert.NotNil(t, l.stats[edgeKey{0, "User", "posts"}], "a view's posts were followed")
	assert.Nil(t, l.stats[edgeKey{1, "User", "posts"}], "not a friend's")
}
