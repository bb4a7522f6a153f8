package prefetch

import (
	"context"
	"iter"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// heldLog records what Config.Held is told.
type heldLog struct {
	mu   sync.Mutex
	ids  []string
	from [][]string // From of each call's context
}

func (l *heldLog) held(ctx context.Context, objs iter.Seq[*graph.Object]) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.from = append(l.from, From(ctx))
	for o := range objs {
		l.ids = append(l.ids, o.ID)
	}
}

// take returns the ids told so far, sorted and deduplicated, and forgets them.
func (l *heldLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := slices.Compact(slices.Sorted(slices.Values(l.ids)))
	l.ids = nil
	return ids
}

// below returns the ids of objs other than root's, sorted.
func below(objs []*graph.Object, root string) []string {
	var ids []string
	for _, o := range objs {
		if o.ID != root {
			ids = append(ids, o.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// A job that walks through what the cache holds tells Config.Held of it:
// those are its predictions as much as what it fetches, and a warm cache
// fetches nothing. A cold job's fetched objects are not told (the origin
// brought them; near.Hub.Fetching pushes those).
func TestJobsTellWhatTheyFindHeld(t *testing.T) {
	objs := tree(t, 2, 3) // a root, 2 children, 4 grandchildren
	root := objs[0].ID
	for _, tc := range []struct {
		name string
		mode Mode
		p    Planner
		hint Hint
	}{
		{"static, a request's hint", ModeStatic, Static{Depth: 2}, Hint{Depth: new(2)}},
		{"adaptive, the chooser's chances", ModeAdaptive, fixedChooser{chance: 1, near: 0.5, far: 0.5}, Hint{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log heldLog
			fo := newFakeOrigin(objs)
			r := newRig(t, fo, Config{Mode: tc.mode, Held: log.held}, tc.p, cache.Config{})
			ctx := context.Background()
			_, _, err := r.engine.Get(ctx, []string{root}, tc.hint)
			require.NoError(t, err)
			r.engine.s.Idle()
			assert.Empty(t, log.take(), "a cold job finds nothing held")
			asked := len(fo.AskedIDs())

			_, _, err = r.engine.Get(ctx, []string{root}, tc.hint)
			require.NoError(t, err)
			r.engine.s.Idle()
			assert.Equal(t, below(objs, root), log.take(), "the warm job walks through everything below the root")
			for _, from := range log.from {
				assert.Equal(t, []string{root}, from, "told whom the prediction is for: the reader of the root")
			}
			assert.Len(t, fo.AskedIDs(), asked, "and fetches nothing")
		})
	}
}

// What a job's context names is bounded, however many ids its request read
// (see maxFrom), and so is what the jobs of one gated Expand name.
func TestWhomAPredictionIsForIsBounded(t *testing.T) {
	var roots []*graph.Object
	for i := range 3 * maxFrom {
		roots = append(roots, node(fmtInt(i)))
	}
	j := job{roots: roots, ahead: []string{"a1", "a2"}}
	assert.Len(t, j.from(), maxFrom)
	assert.Equal(t, "0", j.from()[0], "the request's first ids")
	assert.Equal(t, []string{"0", "a1", "a2"}, (&job{roots: roots[:1], ahead: []string{"a1", "a2"}}).from())
	assert.Equal(t, []string{"a1"}, (&job{ahead: []string{"a1"}}).from(), "a demand caught up at a1")
	assert.Nil(t, (&job{roots: roots, refresh: []string{"x"}}).from(), "a refresh predicts nothing")

	var g wholeGate
	require.True(t, g.enter([]string{"r"}, nil, graph.Budget{Depth: 1}, 1<<20))
	for i := range maxGateFrom {
		g.enter([]string{"r" + fmtInt(i)}, j.from(), graph.Budget{Depth: 1}, 1<<20)
	}
	_, from, _ := g.next(1 << 20)
	assert.Len(t, from, maxGateFrom)
}
