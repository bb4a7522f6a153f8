package prefetch

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// An object read again is remembered at the depth of its latest read until
// the horizon has passed that read, not its first: a friend read in one
// friends-of-friends session and again in the next is still a friend, one
// level down, while the next session reads its list.
func TestLearnedRemembersTheDepthOfTheLatestRead(t *testing.T) {
	l := NewLearned(LearnedConfig{Horizon: 8})
	read := reader(l)
	read(user("u", 2, "f"))
	read(user("f0", 0, "")) // u's first friend: depth 1
	require.Equal(t, 1, l.Depth("f0"))
	for i := range 4 {
		read(&graph.Object{ID: fmt.Sprint("other", i), Type: "Post"})
	}
	v := &graph.Object{ID: "v", Type: "User", Refs: []graph.Ref{{Field: "friends", ID: "f0"}, {Field: "friends", ID: "g1"}}}
	read(v)
	read(user("f0", 0, "")) // v's first friend now
	require.Equal(t, 1, l.Depth("f0"))
	for i := range 4 { // the horizon passes the first read of f0, not the second
		read(&graph.Object{ID: fmt.Sprint("more", i), Type: "Post"})
	}
	assert.Equal(t, 1, l.Depth("f0"), "remembered at its latest read's depth")
}

// The chances of a list being read are those of the lists of its field
// read as far as it was: a field most of whose lists nobody starts (a
// friend's friends, in friends of friends, where the lists of friends of
// friends are offered and passed by) has a low chance at every position,
// but a list being read, of a field whose started lists are read on, is
// read on. A field whose lists stop after a few is not.
func TestLearnedChancesOfAListBeingReadAreConditional(t *testing.T) {
	tests := []struct {
		name string
		rate func(b int) float64 // follows per offer at bucket b
		want func(t *testing.T, reading, other []float64)
	}{
		{"started lists are read on", func(int) float64 { return 0.15 }, func(t *testing.T, reading, other []float64) {
			for pos := 41; pos < 100; pos++ {
				assert.GreaterOrEqual(t, reading[pos], 0.5, "position %d of the list being read", pos)
			}
			assert.Less(t, other[50], 0.5, "a list not being read: as often as the field's lists get there")
		}},
		{"lists stop after a few", func(b int) float64 { return map[bool]float64{true: 0.9, false: 0}[b < 3] }, func(t *testing.T, reading, _ []float64) {
			assert.Less(t, reading[50], NewLearned(LearnedConfig{}).cfg.MinChance, "no list of the field was read that far")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLearned(LearnedConfig{})
			s := &fieldStats{maxRun: 200, lists: 10, show: &followShow{runs: 10}}
			for b := range buckets {
				s.offered[b] = 100
				s.followed[b] = 100 * tt.rate(b)
				s.allOffered += s.offered[b]
				s.allFollowed += s.followed[b]
			}
			l.stats[edgeKey{1, "User", "friends"}] = s
			l.lists[listKey{"g", "friends"}] = &listRun{followed: 40, last: 39}
			reading := l.Chances(user("g", 100, "g"), 1, 0, nil)
			other := l.Chances(user("h", 100, "h"), 1, 0, nil)
			tt.want(t, reading, other)
		})
	}
}

// A list longer than the refs offered at once is offered further as it is
// read: each of its reads, past the first offersPerList too, follows it.
func TestLearnedFollowsALongListToItsEnd(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	n := 2*offersPerList + 88
	l.Read([]*graph.Object{user("hub", n, "f")}, false, 0)
	below := 0
	for i := range n {
		id := fmt.Sprint("f", i)
		l.Read([]*graph.Object{user(id, 0, "")}, false, 0)
		if l.Depth(id) == 1 {
			below++
		}
	}
	assert.Equal(t, n, below, "every read one level below the hub")
}

// A list being read is expanded again as its reader nears the end of what
// its last expansion was asked to reach (the reads of two round trips
// ahead, at least 2×minAhead), when what lies past that is less likely
// than Threshold, so that its job fetched only what was due: not at every
// follow, not where the job fetched the refs past it anyway, and not only
// at its first follows. Without it, a list whose field's evidence was
// settled was fetched only as far as the jobs of its first follows
// reached (a friend's 155 friends waited for the origin at each of their
// last 30).
func TestLearnedReexpandsAListAsItIsRead(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	s := &fieldStats{maxRun: 200, lists: 100, show: &followShow{runs: 100}}
	for b := range buckets { // lists read on less and less often: 0.9 to 15, 0.6 to 31, 0.3 to 63, 0.1 further
		rate := []float64{0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.6, 0.3}
		s.offered[b], s.followed[b] = 1000, 100
		if b < len(rate) {
			s.followed[b] = 1000 * rate[b]
		}
		s.allOffered += s.offered[b]
		s.allFollowed += s.followed[b]
	}
	l.stats[edgeKey{0, "User", "friends"}] = s
	const n = 100
	l.Read([]*graph.Object{user("list", n, "f")}, false, 0)
	var again []int
	for i := range n {
		if parents := l.Read([]*graph.Object{user(fmt.Sprint("f", i), 0, "")}, false, 0); len(parents) > 0 {
			require.Equal(t, []string{"list"}, parents)
			again = append(again, i)
		}
	}
	require.NotEmpty(t, again)
	assert.Equal(t, 0, again[0], "its first follow")
	assert.Less(t, len(again), n/minAhead, "not at every few follows")
	var nearing []int // as the reads due near position 64, past which 1 in 3 of the lists read that far go on
	for _, i := range again {
		if i >= 64-2*minAhead && i < 64 {
			nearing = append(nearing, i)
		}
	}
	assert.NotEmpty(t, nearing, "asked for again at %v", again)
}

// Chances with a least gives what it gives without, except 0 for refs below least:
// a list nobody reads far costs no estimate a ref, and nothing it could
// fetch is lost.
func TestLearnedChancesDropOnlyWhatIsBelowLeast(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	l.Read([]*graph.Object{user("u", 6, "f")}, false, 0)
	for i := range 3 { // u's first friends: a list read a few at a time
		l.Read([]*graph.Object{user(fmt.Sprint("f", i), 0, "")}, false, 0)
	}
	hub := user("hub", 40, "h")
	all := l.Chances(hub, 0, 0, nil)
	require.Positive(t, all[0])
	for _, least := range []float64{0.01, all[0] / 2, all[0], all[0] + 0.01, 1} {
		got := l.Chances(hub, 0, least, nil)
		for i, p := range all {
			if p >= least {
				assert.Equal(t, p, got[i], "least %v, ref %d: reaches least", least, i)
			} else {
				assert.Contains(t, []float64{0, p}, got[i], "least %v, ref %d", least, i)
			}
		}
	}
	assert.Equal(t, make([]float64, len(all)), l.Chances(hub, 0, 1.01, nil), "nothing reaches more than 1")
}
