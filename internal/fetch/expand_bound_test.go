package fetch

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch/fetchtest"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/metrics"
)

// floodExpander answers an Expand correctly, then keeps sending: objects
// nobody asked for at the last level, forever, or a level out of range.
type floodExpander struct {
	*fetchtest.Origin
	badLevel int // sent after the walk when non-zero
	sent     int // flood messages sent
}

func (f *floodExpander) Expand(ctx context.Context, roots []string, known []*graph.Object, b graph.Budget, fn func(int, []*graph.Object, []string) error) error {
	t := graph.NewTraversal(roots, b)
	last := 0
	for !t.Done() {
		level := t.Level()
		var found []*graph.Object
		for _, id := range t.Pending() {
			if o, ok := f.Objs[id]; ok {
				found = append(found, o)
			}
		}
		if err := fn(level, t.Resolve(found), nil); err != nil {
			return err
		}
		last = level
		if f.badLevel != 0 {
			break // the rest of the walk never comes: a bad level instead
		}
	}
	for ctx.Err() == nil {
		level := last
		if f.badLevel != 0 {
			level = f.badLevel
		}
		f.sent++
		intruder := &graph.Object{ID: "flood-" + itoa(f.sent), Payload: make([]byte, 1024)}
		if err := fn(level, []*graph.Object{intruder}, nil); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// A walk's Expand stops at what the walk asked for: an origin that keeps
// sending is cut off, and nothing beyond the request is cached.
func TestExpandBoundedByTheRequest(t *testing.T) {
	objs := fetchtest.Tree(t, 3, 3) // 13 objects
	fx := &floodExpander{Origin: fetchtest.NewOrigin(objs)}
	r := newRig(t, fx, Config{}, cache.Config{})
	var got int
	missing, err := r.f.Walk(context.Background(), []string{"task-0"}, graph.Budget{Depth: 1}, 0,
		func(_ int, rs []Result) error { got += len(rs); return nil })
	require.NoError(t, err)
	assert.Empty(t, missing)
	assert.Equal(t, 4, got, "the root and its three children")
	assert.LessOrEqual(t, fx.sent, 1, "the stream was cut once the walk was complete")
	_, known := r.c.Peek("task-0.1.1")
	assert.False(t, known, "beyond the depth: not cached")
	_, known = r.c.Peek("flood-1")
	assert.False(t, known, "unrequested: not cached")
}

func TestExpandLevelOutOfRangeIsMalformed(t *testing.T) {
	objs := fetchtest.Tree(t, 2, 3)
	fx := &floodExpander{Origin: fetchtest.NewOrigin(objs), badLevel: 1 << 31}
	r := newRig(t, fx, Config{}, cache.Config{})
	_, err := r.f.Walk(context.Background(), []string{"task-0"}, graph.Budget{Depth: 5}, 0,
		func(int, []Result) error { return nil })
	require.ErrorIs(t, err, ErrMalformedExpand)
	assert.Equal(t, 1, fx.sent)
}

// An object sent that its walk did not schedule is dropped and counted.
func TestExpandDropsUnrequested(t *testing.T) {
	objs := fetchtest.Tree(t, 2, 2)
	fo := fetchtest.NewOrigin(objs)
	x := &extraExpander{Origin: fo}
	r := newRig(t, x, Config{}, cache.Config{})
	_, err := r.f.Walk(context.Background(), []string{"task-0"}, graph.Budget{Depth: 1}, 0,
		func(int, []Result) error { return nil })
	require.NoError(t, err)
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.OriginMalformed.WithLabelValues(metrics.MalformedBeyondBudget)))
	_, known := r.c.Peek("stranger")
	assert.False(t, known)
}

// extraExpander sends one object nobody asked for with the roots.
type extraExpander struct{ *fetchtest.Origin }

func (x *extraExpander) Expand(ctx context.Context, roots []string, known []*graph.Object, b graph.Budget, fn func(int, []*graph.Object, []string) error) error {
	found, _, _ := x.BatchGet(ctx, roots)
	if err := fn(0, append(found, &graph.Object{ID: "stranger"}), nil); err != nil {
		return err
	}
	var next []string
	for _, o := range found {
		for _, r := range o.Refs {
			next = append(next, r.ID)
		}
	}
	kids, _, _ := x.BatchGet(ctx, next)
	return fn(1, kids, nil)
}

// An origin that answers an id again in a later message (an object sent
// again, an object listed missing too, an id listed missing and then sent)
// gets the first answer kept and every repeated object dropped and counted:
// a copy never replaces what was received, nor an object what was said not
// to exist. (Within one message the origin client drops repeats.)
func TestExpandKeepsTheFirstAnswerOfAnID(t *testing.T) {
	objs := fetchtest.Tree(t, 2, 3) // a root, its 2 children, their 4
	fo := fetchtest.NewOrigin(objs)
	r := newRig(t, &againExpander{Origin: fo}, Config{}, cache.Config{})
	got := map[string]*graph.Object{}
	missing, err := r.f.Walk(context.Background(), []string{objs[0].ID}, graph.Budget{Depth: 2}, 0,
		func(_ int, rs []Result) error {
			for _, res := range rs {
				got[res.Object.ID] = res.Object
			}
			return nil
		})
	require.NoError(t, err)
	assert.Equal(t, 3.0, testutil.ToFloat64(r.m.OriginMalformed.WithLabelValues(metrics.MalformedBeyondBudget)))
	kids := objs[0].Refs
	assert.Equal(t, []string{kids[1].ID}, missing, "said missing first, sent after")
	assert.NotContains(t, got, kids[1].ID)
	for _, id := range []string{objs[0].ID, kids[0].ID} {
		require.Contains(t, got, id, "sent, then listed missing too")
		assert.Equal(t, uint64(1), got[id].Version, "%s: the first copy, not the second", id)
		o, _ := r.c.Peek(id)
		require.NotNil(t, o)
		assert.Equal(t, uint64(1), o.Version, "%s: the cache's copy", id)
	}
}

// againExpander sends the root, then its first child with a newer copy of
// the root, listing the root and the second child missing, then the first
// child's children with a newer copy of the first child and the second
// child, listing the first child missing.
type againExpander struct{ *fetchtest.Origin }

func (x *againExpander) Expand(ctx context.Context, roots []string, known []*graph.Object, b graph.Budget, fn func(int, []*graph.Object, []string) error) error {
	found, _, _ := x.BatchGet(ctx, roots)
	root := found[0]
	if err := fn(0, found, nil); err != nil {
		return err
	}
	kids, _, _ := x.BatchGet(ctx, []string{root.Refs[0].ID, root.Refs[1].ID})
	if err := fn(1, []*graph.Object{kids[0], newer(root)}, []string{kids[1].ID, root.ID}); err != nil {
		return err
	}
	var next []string
	for _, r := range kids[0].Refs {
		next = append(next, r.ID)
	}
	grand, _, _ := x.BatchGet(ctx, next)
	return fn(2, append(grand, newer(kids[0]), kids[1]), []string{kids[0].ID})
}

// newer is a copy of o at the next version.
func newer(o *graph.Object) *graph.Object {
	c := *o
	c.Version++
	return &c
}
