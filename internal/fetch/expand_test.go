package fetch

import (
	"context"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch/fetchtest"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
)

// A speculative Expand far larger than the prefetch tier must not hold the
// payloads it streamed through: the cache bounds them, not the expansion.
func TestSpeculativeExpansionKeepsNoPayloads(t *testing.T) {
	var objs []*graph.Object
	require.NoError(t, graph.TaskTrees{Roots: 1, Fanout: 5, Levels: 4, PayloadBytes: 1024}.Generate(func(o *graph.Object) error {
		// As the origin client hands them over: decoded from their bytes,
		// their strings and payload views of them.
		b, err := proto.Marshal(graphpb.ToProto(o))
		if err != nil {
			return err
		}
		o, err = graphpb.Decode(b)
		objs = append(objs, o)
		return err
	}))
	wires := map[string][]byte{}
	for _, o := range objs {
		wires[o.ID] = o.Wire
	}
	fx := &fetchtest.Expander{Origin: fetchtest.NewOrigin(objs)}
	r := newRig(t, fx, Config{}, cache.Config{PrefetchBytes: 16 << 10})
	for _, speculative := range []bool{true, false} {
		r.f.Clear()
		x := r.f.NewExpansion([]string{"task-0"}, graph.Budget{Depth: 3}, speculative)
		require.Empty(t, x.joins)
		require.NoError(t, x.Run(context.Background()))
		var payload int
		var got []*graph.Object
		x.ids.Recorded(func(_ string, o *graph.Object) {
			payload += len(o.Payload)
			got = append(got, o)
		})
		assert.Len(t, got, len(objs), "speculative %v: every object's refs, for the plan", speculative)
		if speculative {
			assert.Zero(t, payload)
			for _, o := range got {
				assert.False(t, pins(o, wires), "%s: what a speculative expansion keeps holds no view of an object's bytes", o.ID)
			}
		} else {
			assert.Equal(t, len(objs)*1024, payload, "a walk's Expand keeps what it must still emit")
		}
		assert.Empty(t, x.owned, "released, objects and all, at the end of each level")
		assert.Empty(t, x.claims)
	}
}

// pins reports whether a string of o lies within the bytes of one of wires.
func pins(o *graph.Object, wires map[string][]byte) bool {
	strs := []string{o.ID}
	for _, r := range o.Refs {
		strs = append(strs, r.Field, r.ID)
	}
	for _, w := range wires {
		lo, hi := uintptr(unsafe.Pointer(unsafe.SliceData(w))), uintptr(unsafe.Pointer(unsafe.SliceData(w)))+uintptr(len(w))
		for _, s := range strs {
			if p := uintptr(unsafe.Pointer(unsafe.StringData(s))); len(s) > 0 && p >= lo && p < hi {
				return true
			}
		}
	}
	return false
}

// A speculative expansion whose root a demand's BatchGet is bringing asks
// the origin for it too, and so gets what lies below it in the same round
// trip; a demanded expansion joins the BatchGet, as it did.
func TestSpeculativeExpansionRidesABatchGetsRoot(t *testing.T) {
	for _, speculative := range []bool{true, false} {
		fx := &fetchtest.Expander{Origin: fetchtest.NewOrigin(fetchtest.Tree(t, 2, 3))}
		fx.Block["task-0"] = true
		r := newRig(t, fx, Config{}, cache.Config{})
		got := make(chan error, 1)
		go func() {
			_, err := r.f.Get(context.Background(), []string{"task-0"})
			got <- err
		}()
		<-fx.Started // the demand's BatchGet is in flight
		x := r.f.NewExpansion([]string{"task-0"}, graph.Budget{Depth: 2}, speculative)
		if speculative {
			assert.Empty(t, x.joins, "not joined: asked for again")
			require.NoError(t, x.Run(context.Background()))
			assert.Equal(t, 1, fx.ExpandCalls())
			assert.Equal(t, 1, fx.SentIDs()["task-0"])
			for _, id := range []string{"task-0.1", "task-0.6"} {
				o, known := r.c.Peek(id)
				assert.True(t, known && o != nil, "%s below the root came with the Expand, before the BatchGet returned", id)
			}
		} else {
			assert.Contains(t, x.joins, r.f.flights.calls["task-0"], "a walk waits for the BatchGet")
			require.NoError(t, x.Run(context.Background()))
			assert.Zero(t, fx.ExpandCalls(), "nothing else to ask for")
		}
		close(fx.Release)
		require.NoError(t, <-got)
	}
}

// A speculative expansion joins a root another Expand is bringing: that one
// brings what lies below it too. The flights table tells the two kinds of
// call apart.
func TestSpeculativeExpansionJoinsAnExpandsRoot(t *testing.T) {
	r, fx, ran := expandingPaused(t, 3, 0) // the first Expand is in flight, its root not sent yet
	second := r.f.NewExpansion([]string{"task-0"}, graph.Budget{Depth: 2}, true)
	assert.Len(t, second.joins, 1, "joined the first Expand's root")
	assert.Empty(t, second.roots, "nothing left to ask the origin for")
	close(fx.Gate[0])
	require.NoError(t, <-ran)
	require.NoError(t, second.Run(context.Background()))
	objs, err := second.JoinedRoots(context.Background())
	require.NoError(t, err)
	require.Len(t, objs, 1)
	assert.Equal(t, 1, fx.ExpandCalls())
}

// expandingPaused starts a speculative Expand of depth 2 below task-0 of a
// binary tree of levels levels, and returns once the origin holds it back
// before sending level gate; close fx.Gate[gate] to let it go on, and ran
// yields what its Run returned.
func expandingPaused(t *testing.T, levels, gate int) (r *rig, fx *fetchtest.Expander, ran chan error) {
	fx = &fetchtest.Expander{Origin: fetchtest.NewOrigin(fetchtest.Tree(t, 2, levels)),
		Gate: map[int]chan struct{}{gate: make(chan struct{})}, Paused: make(chan int, 1)}
	r = newRig(t, fx, Config{}, cache.Config{})
	first := r.f.NewExpansion([]string{"task-0"}, graph.Budget{Depth: 2}, true)
	ran = make(chan error, 1)
	go func() { ran <- first.Run(context.Background()) }()
	<-fx.Paused
	return r, fx, ran
}

// An expansion ahead asks for its roots again even while another Expand is
// bringing them, and brings what lies below them before that one returns.
func TestExpansionAheadAsksForRootsAnExpandBrings(t *testing.T) {
	r, fx, ran := expandingPaused(t, 4, 2) // task-0.3 to .6 are claimed, not sent
	ahead := r.f.NewExpansionAhead([]string{"task-0.3"}, graph.Budget{Depth: 1})
	assert.Empty(t, ahead.joins, "not joined: asked for again")
	require.NoError(t, ahead.Run(context.Background()))
	o, known := r.c.Peek("task-0.7")
	assert.True(t, known && o != nil, "below the root, while the first Expand still brings the root")
	close(fx.Gate[2])
	require.NoError(t, <-ran)
	assert.Equal(t, 2, fx.SentIDs()["task-0.3"], "the root came twice")
}

// A demand that joins speculation in flight says so before it waits; one
// that misses, or joins another demand's fetch, does not.
func TestDemandTellsWhenItCaughtUpWithSpeculation(t *testing.T) {
	fx := &fetchtest.Expander{Origin: fetchtest.NewOrigin(fetchtest.Tree(t, 2, 3)),
		Gate: map[int]chan struct{}{1: make(chan struct{})}, Paused: make(chan int, 1)}
	fx.Block["task-0.3"] = true
	r := newRig(t, fx, Config{}, cache.Config{})
	told := make(chan []string, 4)
	r.f.OnCaughtUp(func(_ context.Context, ids []string) { told <- ids })
	x := r.f.NewExpansion([]string{"task-0"}, graph.Budget{Depth: 1}, true)
	ran := make(chan error, 1)
	go func() { ran <- x.Run(context.Background()) }()
	<-fx.Paused // task-0.1 and .2 are claimed, not sent
	got := make(chan error, 3)
	get := func(id string) {
		go func() {
			_, err := r.f.Get(context.Background(), []string{id})
			got <- err
		}()
	}
	get("task-0.1")
	assert.Equal(t, []string{"task-0.1"}, <-told, "told while the Expand is still held back")
	get("task-0.3")
	<-fx.Started // a demand's BatchGet, held back
	select {
	case ids := <-told:
		assert.Equal(t, []string{"task-0.3"}, ids, "a miss is told: the demand overtook speculation")
	case <-time.After(5 * time.Second):
		t.Fatal("a miss was not told")
	}
	get("task-0.3")
	require.Eventually(t, func() bool { return testutil.ToFloat64(r.m.Joined) == 2 }, 5*time.Second, time.Millisecond,
		"the second demand for task-0.3 joined the first's")
	close(fx.Gate[1])
	require.NoError(t, <-ran)
	require.NoError(t, <-got)
	close(fx.Release)
	require.NoError(t, <-got)
	require.NoError(t, <-got)
	assert.Empty(t, told, "a join of a demand's fetch is not speculation caught up with")
}
