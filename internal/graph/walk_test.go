package graph_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// walkNode builds an object whose refs are given as "field:id", or as a bare
// id in field "next".
func walkNode(id string, refs ...string) *graph.Object {
	o := &graph.Object{ID: id, Version: 1}
	for _, r := range refs {
		field, to, ok := strings.Cut(r, ":")
		if !ok {
			field, to = "next", r
		}
		o.Refs = append(o.Refs, graph.Ref{Field: field, ID: to})
	}
	return o
}

// walkStore is an in-memory origin: what it holds, and what it was asked.
type walkStore struct {
	objs  map[string]*graph.Object
	calls [][]string
}

func newWalkStore(objs ...*graph.Object) *walkStore {
	s := &walkStore{objs: make(map[string]*graph.Object)}
	for _, o := range objs {
		s.objs[o.ID] = o
	}
	return s
}

// lookup returns the held objects among ids.
func (s *walkStore) lookup(ids []string) []*graph.Object {
	var out []*graph.Object
	for _, id := range ids {
		if o, ok := s.objs[id]; ok {
			out = append(out, o)
		}
	}
	return out
}

func (s *walkStore) fetch(_ context.Context, ids []string) ([]*graph.Object, error) {
	s.calls = append(s.calls, slices.Clone(ids))
	return s.lookup(ids), nil
}

// drive runs a Traversal to the end against s and returns the ids of each
// level in Pending order.
func drive(t *testing.T, s *walkStore, roots []string, b graph.Budget) (levels [][]string, tr *graph.Traversal) {
	t.Helper()
	tr = graph.NewTraversal(roots, b)
	for i := 0; !tr.Done(); i++ {
		require.Less(t, i, 100, "traversal does not terminate")
		require.Equal(t, len(levels), tr.Level(), "levels advance one at a time")
		levels = append(levels, slices.Clone(tr.Pending()))
		tr.Resolve(s.lookup(tr.Pending()))
	}
	return levels, tr
}

func TestTraversal(t *testing.T) {
	chain := []*graph.Object{walkNode("a", "b"), walkNode("b", "c"), walkNode("c", "d"), walkNode("d")}
	cases := []struct {
		name        string
		objs        []*graph.Object
		roots       []string
		budget      graph.Budget
		wantLevels  [][]string
		wantMissing []string
	}{
		{
			name:  "no roots",
			objs:  chain,
			roots: nil, budget: graph.Budget{Depth: 3},
		},
		{
			name:  "depth 0 is the roots only",
			objs:  chain,
			roots: []string{"a"}, budget: graph.Budget{Depth: 0},
			wantLevels: [][]string{{"a"}},
		},
		{
			name:  "negative depth is depth 0",
			objs:  chain,
			roots: []string{"a"}, budget: graph.Budget{Depth: -1},
			wantLevels: [][]string{{"a"}},
		},
		{
			name:  "depth 1",
			objs:  chain,
			roots: []string{"a"}, budget: graph.Budget{Depth: 1},
			wantLevels: [][]string{{"a"}, {"b"}},
		},
		{
			name:  "depth N stops at N",
			objs:  chain,
			roots: []string{"a"}, budget: graph.Budget{Depth: 2},
			wantLevels: [][]string{{"a"}, {"b"}, {"c"}},
		},
		{
			name:  "depth beyond the graph ends with the graph",
			objs:  chain,
			roots: []string{"a"}, budget: graph.Budget{Depth: 50},
			wantLevels: [][]string{{"a"}, {"b"}, {"c"}, {"d"}},
		},
		{
			name:  "cycle",
			objs:  []*graph.Object{walkNode("a", "b"), walkNode("b", "c"), walkNode("c", "a")},
			roots: []string{"a"}, budget: graph.Budget{Depth: 50},
			wantLevels: [][]string{{"a"}, {"b"}, {"c"}},
		},
		{
			name:  "self reference",
			objs:  []*graph.Object{walkNode("a", "a", "b"), walkNode("b", "b")},
			roots: []string{"a"}, budget: graph.Budget{Depth: 50},
			wantLevels: [][]string{{"a"}, {"b"}},
		},
		{
			name: "shared children are scheduled once",
			objs: []*graph.Object{
				walkNode("a", "b", "c"), walkNode("b", "d", "e"), walkNode("c", "d", "e", "b"),
				walkNode("d"), walkNode("e"),
			},
			roots: []string{"a"}, budget: graph.Budget{Depth: 50},
			wantLevels: [][]string{{"a"}, {"b", "c"}, {"d", "e"}},
		},
		{
			name:  "breadth-first, in discovery order",
			objs:  []*graph.Object{walkNode("a", "c", "b"), walkNode("b", "e"), walkNode("c", "d"), walkNode("d"), walkNode("e")},
			roots: []string{"a"}, budget: graph.Budget{Depth: 50},
			wantLevels: [][]string{{"a"}, {"c", "b"}, {"d", "e"}},
		},
		{
			name:  "dangling refs are reported missing",
			objs:  []*graph.Object{walkNode("a", "b", "ghost"), walkNode("b", "ghost", "phantom")},
			roots: []string{"a"}, budget: graph.Budget{Depth: 50},
			wantLevels:  [][]string{{"a"}, {"b", "ghost"}, {"phantom"}},
			wantMissing: []string{"ghost", "phantom"},
		},
		{
			name:  "a missing root",
			objs:  chain,
			roots: []string{"nope", "a"}, budget: graph.Budget{Depth: 1},
			wantLevels:  [][]string{{"nope", "a"}, {"b"}},
			wantMissing: []string{"nope"},
		},
		{
			name:  "duplicate roots are scheduled once",
			objs:  chain,
			roots: []string{"a", "b", "a", "b"}, budget: graph.Budget{Depth: 1},
			wantLevels: [][]string{{"a", "b"}, {"c"}},
		},
		{
			name:  "a root reached again is not rescheduled",
			objs:  chain,
			roots: []string{"b", "a"}, budget: graph.Budget{Depth: 5},
			wantLevels: [][]string{{"b", "a"}, {"c"}, {"d"}},
		},
		{
			name:  "MaxObjects includes the roots",
			objs:  []*graph.Object{walkNode("a", "b", "c", "d"), walkNode("b"), walkNode("c"), walkNode("d")},
			roots: []string{"a"}, budget: graph.Budget{Depth: 5, MaxObjects: 3},
			wantLevels: [][]string{{"a"}, {"b", "c"}},
		},
		{
			name:  "MaxObjects 1",
			objs:  []*graph.Object{walkNode("a", "b", "c", "d"), walkNode("b"), walkNode("c"), walkNode("d")},
			roots: []string{"a"}, budget: graph.Budget{Depth: 5, MaxObjects: 1},
			wantLevels: [][]string{{"a"}},
		},
		{
			name:  "MaxObjects drops roots beyond the cap",
			objs:  chain,
			roots: []string{"a", "b", "c"}, budget: graph.Budget{Depth: 5, MaxObjects: 2},
			wantLevels: [][]string{{"a", "b"}},
		},
		{
			name:  "MaxObjects counts dangling ids",
			objs:  []*graph.Object{walkNode("a", "ghost", "b", "c"), walkNode("b"), walkNode("c")},
			roots: []string{"a"}, budget: graph.Budget{Depth: 5, MaxObjects: 3},
			wantLevels:  [][]string{{"a"}, {"ghost", "b"}},
			wantMissing: []string{"ghost"},
		},
		{
			name:  "MaxObjects equal to the graph changes nothing",
			objs:  chain,
			roots: []string{"a"}, budget: graph.Budget{Depth: 5, MaxObjects: 4},
			wantLevels: [][]string{{"a"}, {"b"}, {"c"}, {"d"}},
		},
		{
			name:  "fields filter",
			objs:  []*graph.Object{walkNode("a", "owner:o", "next:b", "related:r"), walkNode("b", "owner:o2"), walkNode("o"), walkNode("r"), walkNode("o2")},
			roots: []string{"a"}, budget: graph.Budget{Depth: 5, Fields: []string{"next", "related"}},
			wantLevels: [][]string{{"a"}, {"b", "r"}},
		},
		{
			name:  "fields filter matching nothing",
			objs:  []*graph.Object{walkNode("a", "owner:o"), walkNode("o")},
			roots: []string{"a"}, budget: graph.Budget{Depth: 5, Fields: []string{"subtasks"}},
			wantLevels: [][]string{{"a"}},
		},
		{
			name:  "one ref followed through one of two fields",
			objs:  []*graph.Object{walkNode("a", "owner:b", "next:b"), walkNode("b")},
			roots: []string{"a"}, budget: graph.Budget{Depth: 5, Fields: []string{"next"}},
			wantLevels: [][]string{{"a"}, {"b"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			levels, tr := drive(t, newWalkStore(tc.objs...), tc.roots, tc.budget)
			assert.Equal(t, tc.wantLevels, levels)
			assert.Equal(t, tc.wantMissing, tr.Missing())
			seen := make(map[string]bool)
			n := 0
			for _, l := range levels {
				for _, id := range l {
					assert.False(t, seen[id], "%s scheduled twice", id)
					seen[id] = true
					n++
				}
			}
			if tc.budget.MaxObjects > 0 {
				assert.LessOrEqual(t, n, tc.budget.MaxObjects)
				assert.Equal(t, tc.budget.MaxObjects-n, tr.Remaining())
			} else {
				assert.Equal(t, -1, tr.Remaining())
			}
		})
	}
}

func TestTraversalResolve(t *testing.T) {
	a, b, c := walkNode("a", "x"), walkNode("b", "y"), walkNode("c", "z")
	cases := []struct {
		name         string
		found        []*graph.Object
		wantAccepted []*graph.Object
		wantNext     []string
		wantMissing  []string
	}{
		{
			name:         "any order in, Pending order out",
			found:        []*graph.Object{b, a},
			wantAccepted: []*graph.Object{a, b},
			wantNext:     []string{"x", "y"},
		},
		{
			name:         "objects that were not pending are ignored, refs included",
			found:        []*graph.Object{a, c, b},
			wantAccepted: []*graph.Object{a, b},
			wantNext:     []string{"x", "y"},
		},
		{
			name:         "duplicates: the first copy wins",
			found:        []*graph.Object{a, walkNode("a", "other"), b, b},
			wantAccepted: []*graph.Object{a, b},
			wantNext:     []string{"x", "y"},
		},
		{
			name:         "nil objects are ignored",
			found:        []*graph.Object{nil, a, nil},
			wantAccepted: []*graph.Object{a},
			wantNext:     []string{"x"},
			wantMissing:  []string{"b"},
		},
		{
			name:         "nothing found",
			found:        nil,
			wantAccepted: []*graph.Object{},
			wantMissing:  []string{"a", "b"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := graph.NewTraversal([]string{"a", "b"}, graph.Budget{Depth: 1})
			got := tr.Resolve(tc.found)
			assert.Equal(t, tc.wantAccepted, got)
			assert.Equal(t, 1, tr.Level())
			if len(tc.wantNext) == 0 {
				assert.True(t, tr.Done())
				assert.Empty(t, tr.Pending())
			} else {
				assert.Equal(t, tc.wantNext, tr.Pending())
			}
			assert.Equal(t, tc.wantMissing, tr.Missing())
		})
	}
}

func TestTraversalResolveWhenDone(t *testing.T) {
	tr := graph.NewTraversal(nil, graph.Budget{Depth: 3})
	require.True(t, tr.Done())
	assert.Empty(t, tr.Resolve([]*graph.Object{walkNode("a", "b")}), "nothing was pending")
	assert.True(t, tr.Done())
	assert.Empty(t, tr.Missing())
}

func TestTraversalPendingIsStable(t *testing.T) {
	// The caller may hold the Pending slice while it fetches; Resolve must
	// not write into it.
	tr := graph.NewTraversal([]string{"a", "b"}, graph.Budget{Depth: 1})
	p := tr.Pending()
	tr.Resolve([]*graph.Object{walkNode("a", "c", "d", "e")})
	assert.Equal(t, []string{"a", "b"}, p)
	assert.Equal(t, []string{"c", "d", "e"}, tr.Pending())
}

func TestTraversalFollows(t *testing.T) {
	all := graph.NewTraversal(nil, graph.Budget{})
	assert.True(t, all.Follows("anything"))
	some := graph.NewTraversal(nil, graph.Budget{Fields: []string{"next", "owner"}})
	assert.True(t, some.Follows("next"))
	assert.True(t, some.Follows("owner"))
	assert.False(t, some.Follows("related"))
	assert.False(t, some.Follows(""))
}

type visit struct {
	level int
	id    string
}

func TestWalk(t *testing.T) {
	s := newWalkStore(walkNode("a", "b", "c"), walkNode("b", "a", "d"), walkNode("c", "d", "ghost"), walkNode("d", "d"))
	var got []visit
	err := graph.Walk(context.Background(), []string{"a"}, graph.Budget{Depth: 10}, s.fetch, func(level int, o *graph.Object) error {
		got = append(got, visit{level, o.ID})
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []visit{{0, "a"}, {1, "b"}, {1, "c"}, {2, "d"}}, got, "each object once, breadth-first")
	assert.Equal(t, [][]string{{"a"}, {"b", "c"}, {"d", "ghost"}}, s.calls, "one fetch per level, never an id twice")
}

func TestWalkStops(t *testing.T) {
	errVisit := errors.New("visit says stop")
	errFetch := errors.New("origin down")
	objs := []*graph.Object{walkNode("a", "b", "c"), walkNode("b", "d"), walkNode("c"), walkNode("d")}
	cases := []struct {
		name      string
		ctx       func() (context.Context, context.CancelFunc)
		fetchErr  error
		visitErr  func(cancel context.CancelFunc, level int, o *graph.Object) error
		wantErr   error
		wantCalls int
		wantSeen  []string
	}{
		{
			name:      "visit error stops at once",
			visitErr:  func(_ context.CancelFunc, _ int, o *graph.Object) error { return errIf(o.ID == "b", errVisit) },
			wantErr:   errVisit,
			wantCalls: 2,
			wantSeen:  []string{"a", "b"},
		},
		{
			name:      "fetch error is returned",
			fetchErr:  errFetch,
			wantErr:   errFetch,
			wantCalls: 1,
		},
		{
			name: "canceled before the walk",
			ctx: func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, cancel
			},
			wantErr: context.Canceled,
		},
		{
			name: "canceled during the walk stops before the next level",
			visitErr: func(cancel context.CancelFunc, _ int, o *graph.Object) error {
				if o.ID == "a" {
					cancel()
				}
				return nil
			},
			wantErr:   context.Canceled,
			wantCalls: 1,
			wantSeen:  []string{"a"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			if tc.ctx != nil {
				ctx, cancel = tc.ctx()
			}
			defer cancel()
			s := newWalkStore(objs...)
			fetch := s.fetch
			if tc.fetchErr != nil {
				fetch = func(ctx context.Context, ids []string) ([]*graph.Object, error) {
					s.calls = append(s.calls, ids)
					return nil, tc.fetchErr
				}
			}
			var seen []string
			err := graph.Walk(ctx, []string{"a"}, graph.Budget{Depth: 5}, fetch, func(level int, o *graph.Object) error {
				seen = append(seen, o.ID)
				if tc.visitErr != nil {
					return tc.visitErr(cancel, level, o)
				}
				return nil
			})
			assert.ErrorIs(t, err, tc.wantErr)
			assert.Len(t, s.calls, tc.wantCalls)
			assert.Equal(t, tc.wantSeen, seen)
		})
	}
}

func TestWalkIgnoresUnaskedObjects(t *testing.T) {
	// An origin that answers more than it was asked must not widen the walk.
	s := newWalkStore(walkNode("a", "b"), walkNode("b"), walkNode("x", "y"), walkNode("y"))
	fetch := func(ctx context.Context, ids []string) ([]*graph.Object, error) {
		return append(s.lookup(ids), s.objs["x"], s.objs["y"]), nil
	}
	var seen []string
	err := graph.Walk(context.Background(), []string{"a"}, graph.Budget{Depth: 5}, fetch, func(_ int, o *graph.Object) error {
		seen = append(seen, o.ID)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, seen)
}

func errIf(cond bool, err error) error {
	if cond {
		return err
	}
	return nil
}
