package prefetch

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// socialStep picks, from an object read, the ids read next: the first n
// refs of field, all when n is 0.
type socialStep struct {
	field string
	n     int
}

func (s socialStep) next(o *graph.Object) []string {
	var ids []string
	for _, r := range o.Refs {
		if r.Field == s.field && (s.n == 0 || len(ids) < s.n) {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// readSession reads start, then level by level what each level's steps pick
// from the level before, one Get per object, each object once, thinking
// (waiting for speculation to settle) after every read. It returns the ids
// read.
func readSession(t *testing.T, r *rig, start string, levels ...[]socialStep) []string {
	t.Helper()
	seen := map[string]bool{start: true}
	var read []string
	level := []string{start}
	for l := 0; len(level) > 0; l++ {
		var next []string
		for _, id := range level {
			rs, _, err := r.engine.Get(context.Background(), []string{id}, Hint{})
			require.NoError(t, err)
			r.engine.s.Idle()
			if len(rs) == 0 {
				continue // a deleted object
			}
			read = append(read, id)
			if l >= len(levels) {
				continue
			}
			for _, step := range levels[l] {
				for _, c := range step.next(rs[0].Object) {
					if !seen[c] {
						seen[c] = true
						next = append(next, c)
					}
				}
			}
		}
		level = next
	}
	return read
}

func socialGraph(t *testing.T) (map[string]*graph.Object, []*graph.Object) {
	t.Helper()
	byID := map[string]*graph.Object{}
	var objs []*graph.Object
	g := graph.Social{Users: 400, MaxFriends: 150, DanglingRate: 0.01, PayloadBytes: 16, Seed: 1}
	require.NoError(t, g.Generate(func(o *graph.Object) error {
		byID[o.ID] = o
		objs = append(objs, o)
		return nil
	}))
	return byID, objs
}

// On a skewed social graph read in the access patterns of W5, speculation
// fetches at most three objects for each one the application reads, and
// still fetches some of what it reads. A profile view of a user who sits far
// down the friend list of a user viewed before is a direct request, not a
// sign that friend lists are read that far nor that friends' lists are read
// (inOrderLocked); lists the application passed by count as not followed
// before the next session (closeLocked).
func TestLearnedSocialPatternsFetchLittleMoreThanRead(t *testing.T) {
	friends := socialStep{field: graph.FieldFriends}
	tests := []struct {
		name   string
		starts []int // users, by index
		levels [][]socialStep
	}{
		{"friends of friends", []int{7, 11, 13}, [][]socialStep{{friends}, {friends}}},
		{"feed", []int{3, 5, 8, 9}, [][]socialStep{{{graph.FieldFriends, 5}}, {{graph.FieldPosts, 3}}}},
		// Views of popular users, each reading the first posts and friends.
		{"hot spot", []int{0, 1, 0, 2, 1, 0, 3, 4, 0, 1, 5, 2, 6, 0, 7, 1, 8, 9, 0, 2},
			[][]socialStep{{{graph.FieldPosts, 2}, {graph.FieldFriends, 3}}}},
	}
	byID, objs := socialGraph(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, newFakeOrigin(objs), Config{Mode: ModeAdaptive}, NewLearned(LearnedConfig{}), cache.Config{})
			used := map[string]bool{}
			for _, u := range tt.starts {
				id := graph.UserID(u)
				require.NotNil(t, byID[id])
				for _, got := range readSession(t, r, id, tt.levels...) {
					used[got] = true
				}
			}
			fetched := testutil.ToFloat64(r.m.ObjectsFetched.WithLabelValues("demand")) + testutil.ToFloat64(r.m.PrefetchIssued)
			t.Logf("%s: fetched %v for %d read, prefetch used %v", tt.name, fetched, len(used), testutil.ToFloat64(r.m.PrefetchUsed))
			assert.LessOrEqual(t, fetched, 3*float64(len(used)), "objects fetched ≤ 3 × objects read")
			assert.Greater(t, testutil.ToFloat64(r.m.PrefetchUsed), 0.0, "and speculation did help")
		})
	}
}

// A query's trees read whole, object by object, as db4o activates them: once
// the first level of the first tree was read to its end, and the level
// below it as far as it was read, never pointing back (treeLikeLocked), the
// levels below and the other trees of the query (peersLocked) are expected
// whole too, and one Expand brings them. Learned level by level, each tree
// and each level would cost round trips of its own (69 origin calls here).
func TestLearnedForestIsFetchedInFewRoundTrips(t *testing.T) {
	g := graph.TaskTrees{Roots: 5, Fanout: 5, Levels: 4, PayloadBytes: 10}
	var objs []*graph.Object
	require.NoError(t, g.Generate(func(o *graph.Object) error { objs = append(objs, o); return nil }))
	fo := &fakeExpander{Origin: newFakeOrigin(objs)}
	r := newRig(t, fo, Config{Mode: ModeAdaptive}, NewLearned(LearnedConfig{}), cache.Config{})
	var roots []string
	for i := range g.Roots {
		roots = append(roots, g.RootID(i))
	}
	_, _, err := r.engine.Get(context.Background(), roots, Hint{})
	require.NoError(t, err)
	r.engine.s.Idle()
	misses := 0
	for _, id := range roots {
		for _, s := range walkByGetThinking(t, r.engine, id, r.engine.s.Idle) {
			if s == StatusMiss {
				misses++
			}
		}
	}
	// The roots, the first child, the second (one follow shows no pattern:
	// fieldStats.shown), then the levels.
	assert.LessOrEqual(t, fo.Calls()+fo.ExpandCalls(), 7, "origin calls for %d objects", len(objs))
	assert.Equal(t, 1, fo.ExpandCalls(), "the rest of the forest in one Expand")
	assert.LessOrEqual(t, misses, 2, "the application waited for the origin twice")
}

// eager is a chooser that expects every ref to be read.
type eager struct{ Static }

func (eager) Threshold() float64                                              { return 0.5 }
func (eager) Limits() (int, int)                                              { return 8, 1000 }
func (eager) Depth(string) int                                                { return 0 }
func (eager) ReadAt(time.Time, []*graph.Object, bool, time.Duration) []string { return nil }
func (eager) Ahead(time.Duration) (int, float64)                              { return 0, 0.5 }
func (eager) Distance(time.Duration) int                                      { return 1 }
func (eager) Followed(float64) []string                                       { return []string{graph.TaskField} }
func (eager) Chances(o *graph.Object, _ int, _ float64, out []float64) []float64 {
	out = out[:0]
	for range o.Refs {
		out = append(out, 1)
	}
	return out
}

// Two reads whose jobs want the same whole levels make one Expand: the
// second job leaves them to the one in flight instead of bringing all of
// it again.
func TestOneWholeLevelsExpandAtATime(t *testing.T) {
	fo := newFakeOrigin(tree(t, 3, 4))
	fx := &fakeExpander{Origin: fo, Gate: map[int]chan struct{}{1: make(chan struct{})}, Paused: make(chan int, 2)}
	r := newRig(t, fx, Config{Mode: ModeAdaptive, Workers: 2}, eager{}, cache.Config{})
	s := r.engine.s
	get := func() {
		_, _, err := r.engine.Get(context.Background(), []string{"task-0"}, Hint{})
		require.NoError(t, err)
	}
	get()
	require.Equal(t, 1, <-fx.Paused, "the first job's Expand is under way")
	get() // a hit: its job wants the same levels
	waitJobs(t, s, 1, "the second job ended while the first waits")
	close(fx.Gate[1])
	s.Idle()
	assert.Equal(t, 1, fx.ExpandCalls())
	assert.Equal(t, 1, fo.Calls(), "the demand's only: nothing fetched twice")
}
