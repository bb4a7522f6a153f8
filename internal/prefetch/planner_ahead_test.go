package prefetch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// readChain reads n links of a chain with gap between the answers, the
// reads waited for the origin or not, a demand round trip costing rtt.
func readChain(l *Learned, c *clock, from, n int, gap time.Duration, waited bool, rtt time.Duration) {
	for i := from; i < from+n; i++ {
		c.Add(gap)
		l.Read([]*graph.Object{{ID: fmt.Sprint("n", i), Type: "Node", Refs: []graph.Ref{{Field: "next", ID: fmt.Sprint("n", i+1)}}}}, waited, rtt)
	}
}

func newPacedLearned(cfg LearnedConfig) (*Learned, *clock) {
	l := NewLearned(cfg)
	c := &clock{now: time.Unix(0, 0)}
	l.now = c.Now
	return l, c
}

// Knafla's object distance: the levels that must be on their way are the
// reads the application makes in two round trips (one for the fetch, one
// for the fetch before it), on a path one level each.
func TestLearnedAheadIsTheReadsOfTwoRoundTrips(t *testing.T) {
	tests := []struct {
		name       string
		gap        time.Duration
		rtt        time.Duration
		wantLevels int
	}{
		{"no think time: five reads per round trip", 100 * time.Microsecond, 500 * time.Microsecond, 10},
		{"think time as long as the round trip: the next two reads", time.Millisecond, time.Millisecond, 2},
		{"a fast reader and a slow origin: as deep as the planner goes", 100 * time.Microsecond, 5 * time.Millisecond, 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, c := newPacedLearned(LearnedConfig{MaxDepth: 16})
			readChain(l, c, 0, 40, tt.gap, false, tt.rtt) // the round trip a gap is clamped to
			levels, _ := l.Ahead(tt.rtt)
			assert.Equal(t, tt.wantLevels, levels)
		})
	}
}

// A read that waited for the origin says nothing of how fast the
// application reads: its gap holds the stall speculation is to hide.
func TestLearnedAheadIgnoresReadsThatWaited(t *testing.T) {
	l, c := newPacedLearned(LearnedConfig{MaxDepth: 16})
	readChain(l, c, 0, 20, 100*time.Microsecond, false, 500*time.Microsecond)
	readChain(l, c, 20, 20, 600*time.Microsecond, true, 500*time.Microsecond) // misses: think plus a round trip
	levels, _ := l.Ahead(500 * time.Microsecond)
	assert.Equal(t, 10, levels)
}

// Through the fan-out: a reader that reads 4 objects of each list it reads
// has its next 20 reads (two round trips of 10) within 2 levels.
func TestLearnedAheadConvertsReadsToLevelsThroughTheFanOut(t *testing.T) {
	l, c := newPacedLearned(LearnedConfig{MaxDepth: 16})
	var read func(id string, level int)
	read = func(id string, level int) {
		o := &graph.Object{ID: id, Type: "Task"}
		for i := range 4 {
			o.Refs = append(o.Refs, graph.Ref{Field: "subtasks", ID: fmt.Sprint(id, ".", i)})
		}
		c.Add(100 * time.Microsecond)
		l.Read([]*graph.Object{o}, false, time.Millisecond)
		if level < 2 {
			for _, r := range o.Refs {
				read(r.ID, level+1)
			}
		}
	}
	read("t", 0)
	assert.InDelta(t, 4, l.pace.fanOut(), 0.01)
	levels, _ := l.Ahead(time.Millisecond)
	assert.Equal(t, 2, levels, "4 + 16 reads cover 20")
}

// The least chance fetched within the levels ahead is twice the
// break-even of a fetch that saves a round trip when read (paysBack × Cost
// ÷ rtt), between MinChance and Threshold; with no round trip measured
// nothing is ahead.
func TestLearnedAheadThreshold(t *testing.T) {
	l := NewLearned(LearnedConfig{Cost: 15 * time.Microsecond})
	for _, tt := range []struct {
		rtt  time.Duration
		want float64
	}{
		{2 * time.Millisecond, 1.0 / 8}, // MinChance: 15µs is 0.0075 of it
		{120 * time.Microsecond, 0.25},  // a fast origin: a prefetch must be likelier to pay
		{40 * time.Microsecond, 0.5},    // never above Threshold
		{0, 0.5},                        // nothing measured
	} {
		levels, got := l.Ahead(tt.rtt)
		assert.InDelta(t, tt.want, got, 1e-9, "rtt %v", tt.rtt)
		if tt.rtt == 0 {
			assert.Zero(t, levels)
		}
	}
}

// A fetch costs its bytes too: once the application reads objects of 128
// KiB, each costs about 1.3ms at CostPerKiB's 10µs, so a round trip of 2ms
// needs a chance of 4/3 capped at Threshold, where small objects need only
// MinChance; 7.2ms (W7's at 5 ms one way) needs about 0.36, twice a
// branch taken one time in six, whose break-even it nears (0.18).
func TestLearnedAheadThresholdGrowsWithTheObjectsRead(t *testing.T) {
	l := NewLearned(LearnedConfig{Cost: 15 * time.Microsecond})
	read := func(payload int) {
		for i := range 64 {
			l.Read([]*graph.Object{{ID: fmt.Sprint("o", i), Type: "Blob", Payload: make([]byte, payload)}}, false, 2*time.Millisecond)
		}
	}
	read(100)
	_, small := l.Ahead(2 * time.Millisecond)
	assert.InDelta(t, 1.0/8, small, 1e-9, "small objects: MinChance")
	read(128 << 10)
	_, large := l.Ahead(2 * time.Millisecond)
	assert.InDelta(t, 0.5, large, 1e-9, "large objects at 2ms: Threshold")
	_, slow := l.Ahead(7200 * time.Microsecond)
	assert.Greater(t, slow, 2.0/6, "large objects at 7.2ms: a one-in-six branch is not worth its bytes, even at twice its chance")
	assert.Less(t, slow, 0.5)
	read(100)
	_, back := l.Ahead(2 * time.Millisecond)
	assert.InDelta(t, 1.0/8, back, 0.01, "the mean follows the application back to small objects")
}

// Followed names the fields the application is seen to follow, and not
// those it is seen to pass by.
func TestLearnedFollowed(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	for i := range 12 {
		l.Read([]*graph.Object{{ID: fmt.Sprint("n", i), Type: "Node", Refs: []graph.Ref{
			{Field: "next", ID: fmt.Sprint("n", i+1)}, {Field: "skip", ID: fmt.Sprint("s", i)}}}}, false, 0)
	}
	assert.Equal(t, []string{"next"}, l.Followed(1.0/8))
	assert.Empty(t, NewLearned(LearnedConfig{}).Followed(1.0/8), "nothing read, nothing followed")
}

// A field whose chance below Threshold rests on too few offers is a guess
// Chances does not fetch (minEvidence), and Followed does not name it: an
// Expand ahead would fetch what the level's chances leave.
func TestLearnedFollowedNeedsTheEvidenceChancesNeed(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	s := &fieldStats{allOffered: 3, allFollowed: 1}
	s.offered[0], s.followed[0] = 3, 1 // 0.32: below 1/2, on 3 offers
	l.stats[edgeKey{0, "Node", "side"}] = s
	o := &graph.Object{ID: "n", Type: "Node", Refs: []graph.Ref{{Field: "side", ID: "s"}}}
	require.Zero(t, l.Chances(o, 0, 0, nil)[0])
	assert.Empty(t, l.Followed(1.0/8))
	s.offered[0], s.followed[0], s.allOffered, s.allFollowed, s.lists = 5, 2, 5, 2, 2 // 5 offers, 2 lists
	require.Zero(t, l.Chances(o, 0, 0, nil)[0], "two lists, each followed long after its offer: coincidences, for all they show")
	s.show = &followShow{quick: 2} // each followed soon after its offer: evidence
	require.GreaterOrEqual(t, l.Chances(o, 0, 0, nil)[0], 1.0/8)
	assert.Equal(t, []string{"side"}, l.Followed(1.0/8))
}

// uniform is a chooser for which every ref is read with chance p (at 1/2, a
// binary page of Knafla's: one branch of two), and that wants ahead levels
// on their way at chance near.
type uniform struct {
	eager
	p     float64
	ahead int
	near  float64
}

func (u uniform) Ahead(time.Duration) (int, float64) { return u.ahead, u.near }
func (u uniform) Chances(o *graph.Object, _ int, _ float64, out []float64) []float64 {
	out = out[:0]
	for range o.Refs {
		out = append(out, u.p)
	}
	return out
}

// levelsOf returns the level below root of every object of a tree.
func levelsOf(objs []*graph.Object, root string) map[string]int {
	byID := map[string]*graph.Object{}
	for _, o := range objs {
		byID[o.ID] = o
	}
	level := map[string]int{root: 0}
	queue := []string{root}
	for len(queue) > 0 {
		o := byID[queue[0]]
		queue = queue[1:]
		for _, r := range o.Refs {
			level[r.ID] = level[o.ID] + 1
			queue = append(queue, r.ID)
		}
	}
	return level
}

// Within the levels ahead the job fetches down to the near chance (1/8:
// three halvings), beyond them only what reaches Threshold (1/2); level by
// level when the origin cannot Expand.
func TestChanceJobFetchesAheadToTheNearChance(t *testing.T) {
	objs := tree(t, 2, 6)
	level := levelsOf(objs, "task-0")
	for _, tt := range []struct {
		name    string
		chooser uniform
		deepest int
	}{
		{"nothing ahead: the likely level only", uniform{p: 0.5}, 1},
		{"three levels ahead at 1/8", uniform{p: 0.5, ahead: 3, near: 1.0 / 8}, 3},
		{"five levels ahead at 1/8: not below 1/8", uniform{p: 0.5, ahead: 5, near: 1.0 / 8}, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fo := newFakeOrigin(objs)
			r := newRig(t, fo, Config{Mode: ModeAdaptive, Workers: 2}, tt.chooser, cache.Config{})
			_, _, err := r.engine.Get(context.Background(), []string{"task-0"}, Hint{})
			require.NoError(t, err)
			r.engine.s.Idle()
			perLevel := map[int]int{}
			for _, ids := range fo.AskedIDs()[1:] { // after the demand's
				for _, id := range ids {
					perLevel[level[id]]++
				}
			}
			want := map[int]int{}
			for l := 1; l <= tt.deepest; l++ {
				want[l] = 1 << l
			}
			assert.Equal(t, want, perLevel, "objects fetched per level")
		})
	}
}

// Within the levels ahead, a level all of whose refs are wanted starts one
// Expand of as many levels again below it, following the fields the chooser
// has seen followed: a reader that reads levels faster than one per round
// trip outruns a BatchGet per level, and reads that many while the Expand
// is on its way.
func TestChanceJobExpandsTheLevelsAhead(t *testing.T) {
	objs := tree(t, 2, 7)
	level := levelsOf(objs, "task-0")
	fo := newFakeOrigin(objs)
	fx := &fakeExpander{Origin: fo}
	// Each ref at 0.4, below Threshold: beyond the levels ahead no list is
	// expected read whole.
	r := newRig(t, fx, Config{Mode: ModeAdaptive, Workers: 2}, uniform{p: 0.4, ahead: 4, near: 1.0 / 16}, cache.Config{})
	_, _, err := r.engine.Get(context.Background(), []string{"task-0"}, Hint{})
	require.NoError(t, err)
	r.engine.s.Idle()
	assert.Equal(t, 1, fx.ExpandCalls())
	perLevel := map[int]int{}
	for id := range fx.SentIDs() {
		perLevel[level[id]]++
	}
	assert.Equal(t, map[int]int{1: 2, 2: 4, 3: 8, 4: 16, 5: 32}, perLevel, "the candidates' level and 4 below, nothing deeper")
	assert.Equal(t, 1, fo.Calls(), "the demand's BatchGet only")
}

// page is a chooser that reads Knafla's pages: next always, one of left and
// right.
type page struct{ uniform }

func (page) Followed(float64) []string { return []string{"friends", "left", "next", "right"} }

// Chances: next 1, left and right 1/2, the first of friends 1 and the
// others 0 (a hub read a little), anything else 0 (an out-ref never
// followed).
func (page) Chances(o *graph.Object, _ int, _ float64, out []float64) []float64 {
	out = out[:0]
	friends := 0
	for _, r := range o.Refs {
		p := map[string]float64{"next": 1, "left": 0.5, "right": 0.5}[r.Field]
		if r.Field == "friends" {
			if friends == 0 {
				p = 1
			}
			friends++
		}
		out = append(out, p)
	}
	return out
}

// A chain read whole would be fetched by one Expand of its field alone, to
// the first branch; within the levels ahead the Expand follows the fields
// seen followed, through the branches, and leaves out refs of a field never
// followed.
func TestChanceJobExpandsThroughBranchesAhead(t *testing.T) {
	link := func(id, field, to string) *graph.Object {
		return &graph.Object{ID: id, Type: "Normal", Refs: []graph.Ref{{Field: field, ID: to}}}
	}
	n0 := link("n0", "next", "n1")
	n0.Refs = append(n0.Refs, graph.Ref{Field: "out", ID: "elsewhere"})
	objs := []*graph.Object{n0, {ID: "elsewhere", Type: "Normal"}, link("n1", "next", "b2"),
		{ID: "b2", Type: "Branch", Refs: []graph.Ref{{Field: "left", ID: "l3"}, {Field: "right", ID: "r3"}}},
		link("l3", "next", "l4"), link("r3", "next", "r4"), link("l4", "next", "l5"), link("r4", "next", "r5"),
		{ID: "l5", Type: "Normal"}, {ID: "r5", Type: "Normal"}}
	fo := newFakeOrigin(objs)
	fx := &fakeExpander{Origin: fo}
	r := newRig(t, fx, Config{Mode: ModeAdaptive, Workers: 2}, page{uniform{ahead: 4, near: 1.0 / 8}}, cache.Config{})
	_, _, err := r.engine.Get(context.Background(), []string{"n0"}, Hint{})
	require.NoError(t, err)
	r.engine.s.Idle()
	assert.Equal(t, 1, fx.ExpandCalls())
	assert.Equal(t, map[string]int{"n1": 1, "b2": 1, "l3": 1, "r3": 1, "l4": 1, "r4": 1, "l5": 1, "r5": 1}, fx.SentIDs(),
		"n1 and 4 levels below it")
}

// A chance below Threshold counts only once its position was offered
// minEvidence times, and lists of its field were followed minLists times:
// before, it is the prior's guess, or a coincidence, and within the levels
// ahead a guess would be fetched.
func TestLearnedUnlikelyChanceNeedsEvidence(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	branch := func(i int) *graph.Object {
		return &graph.Object{ID: fmt.Sprint("b", i), Type: "Branch", Refs: []graph.Ref{
			{Field: "left", ID: fmt.Sprint("l", i)}, {Field: "right", ID: fmt.Sprint("r", i)}}}
	}
	read := func(from, to int) {
		for i := from; i < to; i++ {
			l.Read([]*graph.Object{branch(i)}, false, 0)
			l.Read([]*graph.Object{{ID: fmt.Sprint("l", i), Type: "Leaf"}}, false, 0) // always left
		}
	}
	read(0, 3) // right passed by twice so far
	c := l.Chances(branch(100), 0, 0, nil)
	assert.GreaterOrEqual(t, c[0], 0.5, "left is likely")
	assert.Zero(t, c[1], "right: two offers, a guess")
	read(3, 10)
	right := func(i int) {
		l.Read([]*graph.Object{branch(i)}, false, 0)
		l.Read([]*graph.Object{{ID: fmt.Sprint("r", i), Type: "Leaf"}}, false, 0)
	}
	right(10)
	assert.Zero(t, l.Chances(branch(100), 0, 0, nil)[1], "right: enough offers, followed in one list: a coincidence")
	right(11)
	c = l.Chances(branch(100), 0, 0, nil)
	assert.Greater(t, c[1], 0.0, "right: followed in two lists, enough offers to be believed")
	assert.Less(t, c[1], 0.5, "and unlikely")
}

// A list of a followed field read only in part (a hub's) is not fetched by
// an Expand, which would bring all of it: its wanted refs come by BatchGet.
func TestChanceJobLeavesAListReadInPartToBatchGet(t *testing.T) {
	hub := &graph.Object{ID: "hub", Type: "User"}
	objs := []*graph.Object{hub}
	for i := range 20 {
		id := fmt.Sprint("f", i)
		hub.Refs = append(hub.Refs, graph.Ref{Field: "friends", ID: id})
		objs = append(objs, &graph.Object{ID: id, Type: "User"})
	}
	fo := newFakeOrigin(objs)
	fx := &fakeExpander{Origin: fo}
	r := newRig(t, fx, Config{Mode: ModeAdaptive, Workers: 2}, page{uniform{ahead: 4, near: 1.0 / 8}}, cache.Config{})
	_, _, err := r.engine.Get(context.Background(), []string{"hub"}, Hint{})
	require.NoError(t, err)
	r.engine.s.Idle()
	assert.Zero(t, fx.ExpandCalls())
	assert.Equal(t, [][]string{{"hub"}, {"f0"}}, fo.AskedIDs(), "the demand, then the first friend alone")
}
