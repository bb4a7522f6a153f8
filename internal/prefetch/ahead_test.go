package prefetch

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/cache"
)

// A demand that catches up with static speculation in flight has it go
// twice the depth below what it reads, at once: before the fetch it joined
// returns, and no deeper.
func TestCaughtUpExpandsTwiceTheDepthAtOnce(t *testing.T) {
	fo := newFakeOrigin(tree(t, 2, 5)) // task-0; .1 .2; .3-.6; .7-.14; .15-.30
	fo.Block["task-0.1"] = true
	fx := &fakeExpander{Origin: fo}
	r := newRig(t, fx, Config{}, Static{Depth: 1}, cache.Config{})
	var once sync.Once
	release := func() { once.Do(func() { close(fo.Release) }) }
	t.Cleanup(release) // before the rig's: a failed test must not leave the origin held back
	_, _, err := r.engine.Get(context.Background(), []string{"task-0"}, Hint{})
	require.NoError(t, err)
	<-fo.Started // the speculative BatchGet of .1 and .2, held back
	// Told from here on: the miss of task-0 would have expanded below it too.
	r.engine.f.OnCaughtUp(r.engine.s.CaughtUp)

	got := make(chan []Result, 1)
	go func() {
		rs, _, err := r.engine.Get(context.Background(), []string{"task-0.1"}, Hint{})
		assert.NoError(t, err)
		got <- rs
	}()
	require.Eventually(t, func() bool {
		o, known := r.cache.Peek("task-0.7") // two levels below .1
		return known && o != nil
	}, 5*time.Second, time.Millisecond, "fetched while the demand still waits on the speculation it joined")
	release()
	rs := <-got
	require.Len(t, rs, 1)
	assert.Equal(t, StatusJoined, rs[0].Status)
	r.engine.s.Idle()
	_, known := r.cache.Peek("task-0.15")
	assert.False(t, known, "three levels below .1: beyond twice the depth")
	_, known = r.cache.Peek("task-0.11")
	assert.False(t, known, "below .2, which no demand reached")
}

// A demand with a hint that catches up (here: it misses) is expanded the
// hint's depth below, at once and no deeper, and the request's own job
// does not expand below it again once it is answered: the origin sends
// each object once, in one Expand.
func TestCaughtUpWithAHintExpandsTheHintOnce(t *testing.T) {
	objs := tree(t, 2, 5) // task-0; .1 .2; .3-.6; .7-.14; .15-.30
	fx := &fakeExpander{Origin: newFakeOrigin(objs), Gate: map[int]chan struct{}{1: make(chan struct{})}, Paused: make(chan int, 4)}
	r := newRig(t, fx, Config{Workers: 2}, Static{Depth: 1}, cache.Config{})
	r.engine.f.OnCaughtUp(r.engine.s.CaughtUp)
	depth, most := 3, 14
	h := Hint{Depth: &depth, MaxObjects: &most}
	_, _, err := r.engine.Get(WithHint(context.Background(), h), []string{"task-0"}, h)
	require.NoError(t, err)
	require.Equal(t, 1, <-fx.Paused, "the hint's Expand is under way")
	waitJobs(t, r.engine.s, -1, "every job started")
	close(fx.Gate[1])
	r.engine.s.Idle()
	assert.Equal(t, 1, fx.ExpandCalls(), "one Expand: the hint's, in the round trip of the miss")
	for id, n := range fx.SentIDs() {
		assert.LessOrEqual(t, n, 1, "%s sent again", id)
	}
	for _, o := range objs[1:15] {
		_, held := r.cache.Peek(o.ID)
		assert.True(t, held, "%s: within the hint", o.ID)
	}
	_, held := r.cache.Peek("task-0.15")
	assert.False(t, held, "below the hint's depth")
}
