package prefetch

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// user makes a User with n friends f<prefix>0.. in list order.
func user(id string, n int, prefix string) *graph.Object {
	u := &graph.Object{ID: id, Type: "User"}
	for i := range n {
		u.Refs = append(u.Refs, graph.Ref{Field: "friends", ID: fmt.Sprint(prefix, i)})
	}
	return u
}

// reader returns a function that reads one object through l per request,
// as an application reading object by object does.
func reader(l *Learned) func(*graph.Object) {
	return func(o *graph.Object) { l.Read([]*graph.Object{o}, false, 0) }
}

func TestLearnedChances(t *testing.T) {
	tests := []struct {
		name  string
		reads int // friends of the hub read, in list order
		want  func(t *testing.T, c []float64)
	}{
		{name: "nothing known: nothing is fetched, at any threshold", reads: 0, want: func(t *testing.T, c []float64) {
			for i, p := range c {
				assert.Zero(t, p, "ref %d", i)
			}
		}},
		{name: "one read: a coincidence, for all it shows", reads: 1, want: func(t *testing.T, c []float64) {
			for i, p := range c {
				assert.Zero(t, p, "ref %d", i)
			}
		}},
		{name: "two reads: the next positions are likely", reads: 2, want: func(t *testing.T, c []float64) {
			assert.GreaterOrEqual(t, c[2], 0.5)
		}},
		{name: "a list read a few at a time: nothing far down it", reads: 4, want: func(t *testing.T, c []float64) {
			assert.GreaterOrEqual(t, c[5], 0.5, "half again the run")
			for i := 7; i < len(c); i++ {
				assert.Zero(t, c[i], "position %d is beyond what any list was read to", i)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLearned(LearnedConfig{})
			hub := user("hub", 3000, "f")
			l.Read([]*graph.Object{hub}, false, 0)
			for i := range tt.reads {
				parents := l.Read([]*graph.Object{{ID: fmt.Sprint("f", i), Type: "User"}}, false, 0)
				assert.Equal(t, []string{"hub"}, parents, "a follow names the list it came from")
			}
			tt.want(t, l.Chances(hub, 0, 0, nil))
		})
	}
}

// The same field is followed at one depth and not at the next: a feed reads
// a user's friends, never the friends' friends.
func TestLearnedSeparatesDepths(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	for r := range 5 {
		root := user(fmt.Sprint("root", r), 5, fmt.Sprint("r", r, "f"))
		l.Read([]*graph.Object{root}, false, 0)
		for i := range 5 {
			l.Read([]*graph.Object{user(fmt.Sprint("r", r, "f", i), 5, fmt.Sprint("r", r, "f", i, "ff"))}, false, 0)
		}
	}
	friend := user("x", 5, "xf")
	assert.GreaterOrEqual(t, l.Chances(friend, 0, 0, nil)[0], 0.5, "a root's friends are read")
	assert.Less(t, l.Chances(friend, 1, 0, nil)[0], 0.5, "a friend's friends are not")
	assert.Equal(t, 1, l.Depth("r0f0"))
	assert.Zero(t, l.Depth("root0"))
}

// An offer not followed within the horizon counts against its field.
func TestLearnedHorizonDecidesUnfollowed(t *testing.T) {
	l := NewLearned(LearnedConfig{Horizon: 4})
	for r := range 20 {
		root := user(fmt.Sprint("u", r), 2, fmt.Sprint("u", r, "f"))
		l.Read([]*graph.Object{root}, false, 0)
		l.Read([]*graph.Object{{ID: fmt.Sprint("u", r, "f0"), Type: "User"}}, false, 0) // first friend only
	}
	c := l.Chances(user("z", 2, "zf"), 0, 0, nil)
	assert.Greater(t, c[0], 0.8)
	assert.Less(t, c[1], 0.5, "the second friend was never read")
}

// A shared child offered by a second list keeps its first offer; the second
// list, not started, is returned as a peer whose list became likelier.
func TestLearnedReofferKeepsFirst(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	l.Read([]*graph.Object{user("a", 1, "s")}, false, 0)
	l.Read([]*graph.Object{user("b", 1, "s")}, false, 0)
	assert.Equal(t, []string{"a", "b"}, l.Read([]*graph.Object{{ID: "s0", Type: "User"}}, false, 0))
	assert.NotNil(t, l.lists[listKey{"a", "friends"}], "a's list was read")
	assert.Nil(t, l.lists[listKey{"b", "friends"}], "b's was not")
}

func TestAdaptiveEngineWalk(t *testing.T) {
	objs := tree(t, 3, 4)
	fo := newFakeOrigin(objs)
	r := newRig(t, fo, Config{Mode: ModeAdaptive}, NewLearned(LearnedConfig{}), cache.Config{})
	// Between reads the application thinks for longer than speculation
	// takes: it waits until the scheduler is idle, so what is prefetched
	// does not depend on the machine's speed.
	statuses := walkByGetThinking(t, r.engine, "task-0", r.engine.s.Idle)
	misses := 0
	for _, s := range statuses {
		if s == StatusMiss {
			misses++
		}
	}
	assert.Less(t, misses, len(objs)/2, "with no settings, most of the walk was prefetched")
	assert.LessOrEqual(t, testutil.ToFloat64(r.m.PrefetchIssued), float64(len(objs)), "nothing fetched twice, nothing outside the tree")
	_, _, err := r.engine.Get(context.Background(), []string{"task-0"}, Hint{})
	require.NoError(t, err)
}

// A hub's thousands of refs: an application that reads the first few of
// each list makes speculation fetch a few more, not the hub.
func TestLearnedHubIsExpandedPartially(t *testing.T) {
	var objs []*graph.Object
	for h := range 6 {
		hub := user(fmt.Sprint("hub", h), 2000, fmt.Sprint("h", h, "f"))
		objs = append(objs, hub)
		for i := range 2000 {
			objs = append(objs, &graph.Object{ID: fmt.Sprint("h", h, "f", i), Type: "User"})
		}
	}
	fo := newFakeOrigin(objs)
	r := newRig(t, fo, Config{Mode: ModeAdaptive}, NewLearned(LearnedConfig{}), cache.Config{})
	used := 0
	for h := range 6 {
		ids := []string{fmt.Sprint("hub", h)}
		for i := range 4 {
			ids = append(ids, fmt.Sprint("h", h, "f", i))
		}
		for _, id := range ids {
			_, _, err := r.engine.Get(context.Background(), []string{id}, Hint{})
			require.NoError(t, err)
			used++
			r.engine.s.Idle()
		}
	}
	fetched := testutil.ToFloat64(r.m.ObjectsFetched.WithLabelValues("demand")) + testutil.ToFloat64(r.m.PrefetchIssued)
	assert.LessOrEqual(t, fetched, 3*float64(used), "objects fetched ≤ 3 × objects read")
	assert.Greater(t, testutil.ToFloat64(r.m.PrefetchUsed), 0.0, "and speculation did help")
}

// No object the sidecar holds is fetched again by speculation.
func TestSpeculationNeverRefetchesHeld(t *testing.T) {
	objs := tree(t, 3, 4)
	fo := newFakeOrigin(objs)
	r := newRig(t, fo, Config{Mode: ModeAdaptive}, NewLearned(LearnedConfig{}), cache.Config{})
	for range 3 { // the same walk again: everything is held after the first
		walkByGetThinking(t, r.engine, "task-0", r.engine.s.Idle)
	}
	asked := map[string]int{}
	for _, ids := range fo.AskedIDs() {
		for _, id := range ids {
			asked[id]++
		}
	}
	for id, n := range asked {
		assert.Equal(t, 1, n, "%s fetched %d times", id, n)
	}
}

// A user read directly who sits far down the friend list of a user read
// before (a profile view of the 57th friend) is not a follow of that list:
// lists are read in order, so it is a direct request, at depth 0, and the
// list's 57th position was not followed.
func TestLearnedFarDownAListIsNotAFollow(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	l.Read([]*graph.Object{user("u", 100, "f")}, false, 0)
	for i := range 3 {
		l.Read([]*graph.Object{user(fmt.Sprint("f", i), 2, fmt.Sprint("f", i, "x"))}, false, 0)
	}
	assert.Empty(t, l.Read([]*graph.Object{user("f57", 2, "g")}, false, 0), "no list was read from")
	assert.Zero(t, l.Depth("f57"))
	assert.Equal(t, 3, l.lists[listKey{"u", "friends"}].followed)
	s := l.stats[edgeKey{0, "User", "friends"}]
	assert.Equal(t, 1.0, s.offered[bucket(57)]-s.followed[bucket(57)], "position 57 counted as not followed")
}

// A user read right after a friend of the user before it, and the first new
// friend in that friend's list, looks like a follow of the list; when the
// next read is the user's own first friend, and friends' friends were seen
// not followed before, it started a walk of its own (a profile view): the
// follow is undone, the user was read at depth 0, and friends' friends are
// as unlikely as before.
func TestLearnedWalkFromAFirstReadMakesItDirect(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	// A view before: its friends' lists were passed by, not followed, 16
	// refs: more than chance explains at the prior (seenNotFollowed).
	l.Read([]*graph.Object{user("x", 2, "xf")}, false, 0)
	l.Read([]*graph.Object{user("xf0", 8, "a")}, false, 0)
	l.Read([]*graph.Object{user("xf1", 8, "b")}, false, 0)
	l.Read([]*graph.Object{user("u", 3, "f")}, false, 0)
	l.Read([]*graph.Object{user("f0", 2, "v")}, false, 0) // f0's first friend is v0
	l.Read([]*graph.Object{user("f1", 2, "w")}, false, 0)
	before := *l.stats[edgeKey{1, "User", "friends"}]
	require.Zero(t, before.allFollowed)
	require.NotZero(t, before.allOffered, "friends' friends offered, not followed")
	pace := l.pace
	l.Read([]*graph.Object{user("v0", 2, "v0f")}, false, 0) // a view of v0
	assert.Equal(t, 2, l.Depth("v0"), "at first, a follow of f0's list")
	l.Read([]*graph.Object{user("v0f0", 1, "z")}, false, 0) // v0's first friend
	assert.Zero(t, l.Depth("v0"), "a direct request")
	assert.Equal(t, pace.follows+1, l.pace.follows, "the fan-out counts v0f0's follow, not v0's")
	assert.Equal(t, pace.lists+1, l.pace.lists)
	assert.Equal(t, 1, l.Depth("v0f0"))
	assert.Nil(t, l.lists[listKey{"f0", "friends"}], "f0's list was not read")
	assert.Zero(t, l.stats[edgeKey{1, "User", "friends"}].allFollowed, "no friend's friend was followed")
	assert.NotNil(t, l.lists[listKey{"v0", "friends"}], "v0's list was")
	assert.Less(t, l.Chances(user("y", 2, "yf"), 1, 0, nil)[0], 0.5, "a friend's friends are not fetched")
}

// A reader that descends a chain (each object's one ref, then that
// object's) goes on with the children of every object it reads, as a
// profile view does; with no evidence against the field, each step is a
// follow, and the chain is soon fetched ahead.
func TestLearnedChainIsFollowed(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	link := func(i int) *graph.Object {
		return &graph.Object{ID: fmt.Sprint("n", i), Type: "Node", Refs: []graph.Ref{{Field: "next", ID: fmt.Sprint("n", i+1)}}}
	}
	for i := range 12 {
		l.Read([]*graph.Object{link(i)}, false, 0)
	}
	assert.Equal(t, maxContextDepth+1, l.Depth("n11"), "each read a follow of the one before")
	assert.GreaterOrEqual(t, l.Chances(link(100), maxContextDepth, 0, nil)[0], 0.5, "the next link is fetched")
}

// Reading from a list of an object closes the lists not started of the
// objects read before it at its depth or deeper: a feed that read its
// friends' posts and went on to the next user has shown that friends'
// friends are not read, long before the horizon would say so.
func TestLearnedClosesListsPassedBy(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	feed := func(u string) {
		root := &graph.Object{ID: u, Type: "User"}
		for i := range 2 {
			root.Refs = append(root.Refs, graph.Ref{Field: "friends", ID: fmt.Sprint(u, "f", i)})
		}
		l.Read([]*graph.Object{root}, false, 0)
		for i := range 2 {
			f := user(fmt.Sprint(u, "f", i), 3, fmt.Sprint(u, "f", i, "f"))
			f.Refs = append(f.Refs, graph.Ref{Field: "posts", ID: fmt.Sprint(u, "f", i, "p")})
			l.Read([]*graph.Object{f}, false, 0)
		}
		for i := range 2 {
			l.Read([]*graph.Object{{ID: fmt.Sprint(u, "f", i, "p"), Type: "Post"}}, false, 0)
		}
	}
	feed("a")
	feed("b")
	s := l.stats[edgeKey{1, "User", "friends"}]
	require.NotNil(t, s, "a's friends' friend lists were decided")
	assert.Zero(t, s.allFollowed)
	// a's two friends' lists and b's first friend's, passed by when the feed
	// read its second friend's post: 3 refs each.
	assert.Equal(t, 9.0, s.allOffered)
	assert.Less(t, l.Chances(user("x", 3, "xf"), 1, 0, nil)[0], l.cfg.Prior, "below the prior now")
}

// A friend's friend list starts with the user and the friends read before
// it, which a reader of friends of friends skips: how far down a list is
// fetched counts the refs the walk has not read, or read from that list.
func TestLearnedLimitSkipsWhatTheWalkRead(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	friends := func(id string, ids ...string) *graph.Object {
		o := &graph.Object{ID: id, Type: "User"}
		for _, f := range ids {
			o.Refs = append(o.Refs, graph.Ref{Field: "friends", ID: f})
		}
		return o
	}
	new := func(prefix string, n int) []string {
		var ids []string
		for i := range n {
			ids = append(ids, fmt.Sprint(prefix, i))
		}
		return ids
	}
	l.Read([]*graph.Object{friends("u", "a", "b", "c", "d")}, false, 0)
	l.Read([]*graph.Object{friends("a", append([]string{"u", "b", "c"}, new("ax", 10)...)...)}, false, 0)
	for _, f := range []string{"b", "c", "d"} {
		l.Read([]*graph.Object{friends(f)}, false, 0)
	}
	// The first friend's first two friends: a list read from twice shows
	// the field followed at this depth (fieldStats.shown).
	l.Read([]*graph.Object{friends("ax0")}, false, 0)
	l.Read([]*graph.Object{friends("ax1")}, false, 0)
	b := friends("b", append([]string{"u", "a", "c", "d"}, new("bx", 10)...)...)
	c := l.Chances(b, 1, 0, nil)
	// Friends were read 4 to a list, so friends' friends half again as far:
	// 6 past the 4 the walk read.
	assert.GreaterOrEqual(t, c[10], 0.5, "bx6")
	assert.Zero(t, c[11], "bx7")
}

// A field with no evidence one level down borrows the level above's when a
// list there was read to its end: once a user's whole friend list was read,
// a friend's friends are fetched before any of them was read, as a
// friends-of-friends walk needs.
func TestLearnedBorrowsFromTheLevelAboveReadToItsEnd(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	friend := user("g", 4, "gf") // a friend of a user read before, at depth 1
	assert.Less(t, l.Chances(friend, 1, 0, nil)[0], 0.5, "nothing known")
	l.Read([]*graph.Object{user("u", 3, "f")}, false, 0)
	for i := range 3 {
		l.Read([]*graph.Object{user(fmt.Sprint("f", i), 0, "")}, false, 0) // u's friends, in order, to the end
	}
	require.Nil(t, l.stats[edgeKey{1, "User", "friends"}], "no evidence one level down")
	assert.GreaterOrEqual(t, l.Chances(friend, 1, 0, nil)[0], 0.5, "a friend's first friend is fetched")
}

// A follow re-expands the list it came from only when it can have changed
// what that list's job fetches: its first follow, a list read further than
// any before, a position whose evidence is still thin, or a list read to
// its end past the limit. A tree read whole, once its lists are known, is
// not re-expanded for each child read (movedLocked).
func TestLearnedFollowReexpandsItsListOnlyWhenItMoved(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	var last []string
	for r := range 4 { // four lists of five read whole: positions 0-3 hold 4 offers each
		root := user(fmt.Sprint("root", r), 5, fmt.Sprint("r", r, "f"))
		l.Read([]*graph.Object{root}, false, 0)
		for i := range 5 {
			last = l.Read([]*graph.Object{user(fmt.Sprint("r", r, "f", i), 0, "")}, false, 0)
		}
	}
	require.Equal(t, []string{"root3"}, last, "position 4 of the fourth list: its fourth offer, evidence still thin")
	root := user("root", 5, "f")
	l.Read([]*graph.Object{root}, false, 0)
	assert.Equal(t, []string{"root"}, l.Read([]*graph.Object{user("f0", 0, "")}, false, 0), "a list's first follow")
	assert.Empty(t, l.Read([]*graph.Object{user("f1", 0, "")}, false, 0), "known positions, within the limit")
	assert.Empty(t, l.Read([]*graph.Object{user("f2", 0, "")}, false, 0))

	long := user("long", 40, "g") // read to its end, past the limit of 7
	l.Read([]*graph.Object{long}, false, 0)
	l.Read([]*graph.Object{user("g0", 0, "")}, false, 0)
	for i := 1; i < 5; i++ {
		assert.Equal(t, []string{"long"}, l.Read([]*graph.Object{user(fmt.Sprint("g", i), 0, "")}, false, 0),
			"lists of the field are read to their end: the Copernican continuation moved")
	}
}

// A friend shared by many lists read before is still a follow of the list
// read now: the lists offering one child are the latest maxOffers, so that
// an earlier walk's lists, never followed, do not keep the one being read
// from claiming it (which would make its read, and the reads below it,
// direct requests).
func TestLearnedKeepsTheLatestOffersOfASharedChild(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	for i := range maxOffers + 2 {
		// Earlier walks' users, the shared friend far down their lists.
		old := user(fmt.Sprint("old", i), 10, fmt.Sprint("old", i, "f"))
		old.Refs = append(old.Refs, graph.Ref{Field: "friends", ID: "shared"})
		l.Read([]*graph.Object{old}, false, 0)
	}
	me := &graph.Object{ID: "me", Type: "User", Refs: []graph.Ref{{Field: "friends", ID: "shared"}, {Field: "friends", ID: "other"}}}
	l.Read([]*graph.Object{me}, false, 0)
	parents := l.Read([]*graph.Object{{ID: "shared", Type: "User"}}, false, 0)
	assert.Contains(t, parents, "me", "a follow of the list read last")
	assert.Equal(t, 1, l.Depth("shared"), "one level below a direct request, not one itself")
}
