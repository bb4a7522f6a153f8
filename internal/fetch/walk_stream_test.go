package fetch

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch/fetchtest"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// A walk sends on what its Expand brought of a level while the origin still
// sends the rest of it, in the level's order: a held object in between
// goes with what arrived before it, and the level's end follows in a later
// call once the origin sent it.
func TestWalkEmitsALevelAsItArrives(t *testing.T) {
	objs := fetchtest.Tree(t, 4, 3) // a root, its 4 children, their 16
	root, kids := objs[0], objs[0].Refs
	// The walk's Expand starts at the children (the root is held), and
	// sends them in two messages: the first two it does not hold, then
	// the last.
	fx := &splitExpander{Origin: fetchtest.NewOrigin(objs), at: 0, split: 2, sent: make(chan struct{}), resume: make(chan struct{})}
	r := newRig(t, fx, Config{}, cache.Config{})
	r.c.AddDemand(root, fx.Objs[kids[1].ID])

	type call struct {
		level int
		ids   []string
		st    []Status
	}
	calls := make(chan call, 16)
	done := make(chan error, 1)
	go func() {
		_, err := r.f.Walk(context.Background(), []string{root.ID}, graph.Budget{Depth: 2}, 0, func(level int, rs []Result) error {
			c := call{level: level}
			for _, res := range rs {
				c.ids, c.st = append(c.ids, res.Object.ID), append(c.st, res.Status)
			}
			calls <- c
			return nil
		})
		done <- err
	}()
	require.Equal(t, call{0, []string{root.ID}, []Status{StatusHit}}, <-calls)
	<-fx.sent
	select {
	case c := <-calls:
		assert.Equal(t, call{1, []string{kids[0].ID, kids[1].ID, kids[2].ID}, []Status{StatusMiss, StatusHit, StatusMiss}}, c,
			"what arrived, and the held child between it, in the level's order")
	case <-time.After(10 * time.Second):
		t.Fatal("the walk held back what had arrived of level 1 until the level was complete")
	}
	close(fx.resume)
	require.Equal(t, call{1, []string{kids[3].ID}, []Status{StatusMiss}}, <-calls)
	c := <-calls
	assert.Equal(t, 2, c.level)
	assert.Len(t, c.ids, 16)
	require.NoError(t, <-done)
	assert.Empty(t, calls)
}

// splitExpander is an Expand that sends level at in two messages, the first
// with split objects, and waits for resume between them, having said so on
// sent.
type splitExpander struct {
	*fetchtest.Origin
	at, split    int
	sent, resume chan struct{}
}

func (f *splitExpander) Expand(ctx context.Context, roots []string, known []*graph.Object, b graph.Budget, fn func(int, []*graph.Object, []string) error) error {
	t := graph.NewTraversal(roots, b)
	for !t.Done() {
		level := t.Level()
		found, missing, err := f.BatchGet(ctx, t.Pending())
		if err != nil {
			return err
		}
		var send []*graph.Object
		for _, o := range t.Resolve(found) {
			if !isKnown(known, o.ID) {
				send = append(send, o)
			}
		}
		if level == f.at {
			if err := fn(level, send[:f.split], nil); err != nil {
				return err
			}
			close(f.sent)
			<-f.resume
			send = send[f.split:]
		}
		if err := fn(level, send, missing); err != nil {
			return err
		}
	}
	return nil
}

func isKnown(known []*graph.Object, id string) bool {
	for _, k := range known {
		if k.ID == id {
			return true
		}
	}
	return false
}

// A demand for an object a walk's Expand is bringing waits for it rather
// than asking the origin again, and once it has it, so does the cache: the
// Expand's settler puts a message's objects in the cache before it
// releases those waiting for them.
func TestWalksExpandAnswersADemandItBrings(t *testing.T) {
	objs := fetchtest.Tree(t, 2, 3) // a root, its 2 children, their 4
	kid := objs[0].Refs[0].ID
	fx := &fetchtest.Expander{Origin: fetchtest.NewOrigin(objs),
		Gate: map[int]chan struct{}{1: make(chan struct{})}, Paused: make(chan int, 1)}
	r := newRig(t, fx, Config{}, cache.Config{})
	walked := make(chan error, 1)
	go func() {
		_, err := r.f.Walk(context.Background(), []string{objs[0].ID}, graph.Budget{Depth: 2}, 1<<20, func(int, []Result) error { return nil })
		walked <- err
	}()
	require.Equal(t, 1, <-fx.Paused, "the origin sent the root and holds its children")
	got := make(chan *Result, 1)
	go func() {
		res, err := r.get(t, kid)
		assert.NoError(t, err)
		_, cached := r.c.Peek(kid)
		assert.True(t, cached, "in the cache by the time the demand has it")
		got <- res
	}()
	require.Eventually(t, func() bool { return testutil.ToFloat64(r.m.Joined) > 0 }, 10*time.Second, time.Millisecond)
	close(fx.Gate[1])
	res := <-got
	require.NotNil(t, res)
	assert.Equal(t, kid, res.Object.ID)
	assert.Equal(t, StatusJoined, res.Status)
	require.NoError(t, <-walked)
	assert.Zero(t, fx.Calls(), "no BatchGet: the demand waited for the Expand")
}
