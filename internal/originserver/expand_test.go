package originserver

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// expandGraph has every shape Expand must survive:
//
//	cycle:    a → b → c → a
//	self:     s → s, s → t → s
//	diamond:  r → x, r → y, x → z, y → z, x → w, z → r (parent)
//	dangling: d → ghost, d → e → ghost2
var expandGraph = []*graph.Object{
	node("a", "next", "b"),
	node("b", "next", "c"),
	node("c", "next", "a"),
	node("s", "self", "s", "next", "t"),
	node("t", "next", "s"),
	node("r", "child", "x", "child", "y"),
	node("x", "child", "z", "child", "w"),
	node("y", "child", "z"),
	node("z", "parent", "r"),
	node("w"),
	node("d", "child", "ghost", "child", "e"),
	node("e", "child", "ghost2"),
}

// expansion is what one Expand streamed: ids by level in arrival order.
type expansion struct {
	objects map[uint32][]string
	missing map[uint32][]string
}

func collectExpansion(t *testing.T, msgs []*lookaheadv1.ExpandResponse) expansion {
	t.Helper()
	e := expansion{objects: map[uint32][]string{}, missing: map[uint32][]string{}}
	seen := map[string]bool{}
	last := uint32(0)
	for _, m := range msgs {
		require.GreaterOrEqual(t, m.GetLevel(), last, "levels arrive in order")
		last = m.GetLevel()
		require.True(t, len(m.GetObjects())+len(m.GetMissingIds()) > 0, "no empty messages")
		for _, o := range m.GetObjects() {
			require.False(t, seen[o.GetId()], "object %s sent twice", o.GetId())
			seen[o.GetId()] = true
			e.objects[m.GetLevel()] = append(e.objects[m.GetLevel()], o.GetId())
		}
		e.missing[m.GetLevel()] = append(e.missing[m.GetLevel()], m.GetMissingIds()...)
	}
	maps.DeleteFunc(e.missing, func(_ uint32, v []string) bool { return len(v) == 0 })
	return e
}

func levels(kv ...any) map[uint32][]string {
	m := map[uint32][]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[uint32(kv[i].(int))] = kv[i+1].([]string)
	}
	return m
}

func TestExpand(t *testing.T) {
	h := newHarness(t, Config{}, expandGraph...)
	tests := []struct {
		name        string
		req         *lookaheadv1.ExpandRequest
		wantObjects map[uint32][]string
		wantMissing map[uint32][]string
	}{
		{
			name:        "roots only",
			req:         &lookaheadv1.ExpandRequest{Roots: []string{"a"}},
			wantObjects: levels(0, []string{"a"}),
		},
		{
			name:        "cycle terminates",
			req:         &lookaheadv1.ExpandRequest{Roots: []string{"a"}, Depth: 50},
			wantObjects: levels(0, []string{"a"}, 1, []string{"b"}, 2, []string{"c"}),
		},
		{
			name:        "depth stops the walk",
			req:         &lookaheadv1.ExpandRequest{Roots: []string{"a"}, Depth: 1},
			wantObjects: levels(0, []string{"a"}, 1, []string{"b"}),
		},
		{
			name:        "self reference",
			req:         &lookaheadv1.ExpandRequest{Roots: []string{"s"}, Depth: 5},
			wantObjects: levels(0, []string{"s"}, 1, []string{"t"}),
		},
		{
			name:        "shared child once",
			req:         &lookaheadv1.ExpandRequest{Roots: []string{"r"}, Depth: 10},
			wantObjects: levels(0, []string{"r"}, 1, []string{"x", "y"}, 2, []string{"z", "w"}),
		},
		{
			name:        "dangling refs listed as missing on their level",
			req:         &lookaheadv1.ExpandRequest{Roots: []string{"d"}, Depth: 5},
			wantObjects: levels(0, []string{"d"}, 1, []string{"e"}),
			wantMissing: levels(1, []string{"ghost"}, 2, []string{"ghost2"}),
		},
		{
			name:        "missing and duplicate roots",
			req:         &lookaheadv1.ExpandRequest{Roots: []string{"nope", "a", "a", "s"}, Depth: 1},
			wantObjects: levels(0, []string{"a", "s"}, 1, []string{"b", "t"}),
			wantMissing: levels(0, []string{"nope"}),
		},
		{
			name:        "max_objects caps in breadth-first order",
			req:         &lookaheadv1.ExpandRequest{Roots: []string{"r"}, Depth: 10, MaxObjects: 4},
			wantObjects: levels(0, []string{"r"}, 1, []string{"x", "y"}, 2, []string{"z"}),
		},
		{
			name:        "max_objects smaller than roots",
			req:         &lookaheadv1.ExpandRequest{Roots: []string{"a", "r", "s"}, Depth: 10, MaxObjects: 2},
			wantObjects: levels(0, []string{"a", "r"}),
		},
		{
			name:        "fields filter",
			req:         &lookaheadv1.ExpandRequest{Roots: []string{"z", "s"}, Depth: 10, Fields: []string{"parent", "self"}},
			wantObjects: levels(0, []string{"z", "s"}, 1, []string{"r"}),
		},
		{
			name:        "known ids are walked through but not sent",
			req:         &lookaheadv1.ExpandRequest{Roots: []string{"r"}, Depth: 10, KnownIds: []string{"x", "z"}},
			wantObjects: levels(0, []string{"r"}, 1, []string{"y"}, 2, []string{"w"}),
		},
		{
			name:        "known root",
			req:         &lookaheadv1.ExpandRequest{Roots: []string{"a"}, Depth: 10, KnownIds: []string{"a", "unrelated"}},
			wantObjects: levels(1, []string{"b"}, 2, []string{"c"}),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stream, err := h.client.Expand(testCtx(t), tc.req)
			require.NoError(t, err)
			msgs, err := recvAll(t, stream)
			require.NoError(t, err)
			got := collectExpansion(t, msgs)
			assert.Equal(t, tc.wantObjects, got.objects)
			if tc.wantMissing == nil {
				tc.wantMissing = map[uint32][]string{}
			}
			assert.Equal(t, tc.wantMissing, got.missing)
		})
	}
}

// TestExpandMatchesWalk checks Expand against graph.Walk over the same data in
// memory, on a random graph with cycles, shared children and dangling refs.
func TestExpandMatchesWalk(t *testing.T) {
	gen := graph.RandomGraph{N: 400, RefsPerNode: 3, DanglingRate: 0.1, PayloadBytes: 8, Seed: 7}
	byID := map[string]*graph.Object{}
	var objs []*graph.Object
	require.NoError(t, gen.Generate(func(o *graph.Object) error {
		byID[o.ID] = o
		objs = append(objs, o)
		return nil
	}))
	h := newHarness(t, Config{MessageObjects: 7}, objs...)
	fetch := func(_ context.Context, ids []string) ([]*graph.Object, error) {
		var out []*graph.Object
		for _, id := range ids {
			if o, ok := byID[id]; ok {
				out = append(out, o)
			}
		}
		return out, nil
	}
	tests := []struct {
		name  string
		roots []string
		b     graph.Budget
		known []string
	}{
		{name: "deep", roots: []string{gen.NodeID(0)}, b: graph.Budget{Depth: 64}},
		{name: "two levels from many roots", roots: []string{gen.NodeID(1), gen.NodeID(2), gen.NodeID(3), gen.NodeID(2)}, b: graph.Budget{Depth: 2}},
		{name: "capped", roots: []string{gen.NodeID(4)}, b: graph.Budget{Depth: 64, MaxObjects: 57}},
		{name: "one field", roots: []string{gen.NodeID(5)}, b: graph.Budget{Depth: 64, Fields: []string{"next"}}},
		{name: "known", roots: []string{gen.NodeID(6)}, b: graph.Budget{Depth: 64, MaxObjects: 100}, known: []string{gen.NodeID(6), gen.NodeID(7), gen.NodeID(8)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := map[uint32][]string{}
			require.NoError(t, graph.Walk(context.Background(), tc.roots, tc.b, fetch, func(level int, o *graph.Object) error {
				if !slices.Contains(tc.known, o.ID) {
					want[uint32(level)] = append(want[uint32(level)], o.ID)
				}
				return nil
			}))
			stream, err := h.client.Expand(testCtx(t), &lookaheadv1.ExpandRequest{
				Roots: tc.roots, Depth: uint32(tc.b.Depth), MaxObjects: uint32(tc.b.MaxObjects),
				Fields: tc.b.Fields, KnownIds: tc.known,
			})
			require.NoError(t, err)
			msgs, err := recvAll(t, stream)
			require.NoError(t, err)
			got := collectExpansion(t, msgs)
			assert.Equal(t, want, got.objects)
			for _, m := range msgs {
				assert.LessOrEqual(t, len(m.GetObjects()), 7)
				for _, o := range m.GetObjects() {
					assert.Equal(t, byID[o.GetId()].Payload, o.GetPayload())
				}
			}
		})
	}
}

func TestExpandSplitsLevels(t *testing.T) {
	gen := graph.TaskTrees{Roots: 1, Fanout: 5, Levels: 3, PayloadBytes: 100, Seed: 1} // 1 + 5 + 25 tasks
	var objs []*graph.Object
	require.NoError(t, gen.Generate(func(o *graph.Object) error { objs = append(objs, o); return nil }))
	tests := []struct {
		name         string
		cfg          Config
		wantMessages int
	}{
		{name: "by object count", cfg: Config{MessageObjects: 2}, wantMessages: 1 + 3 + 13},
		{name: "by bytes", cfg: Config{MessageBytes: 200}, wantMessages: 31},
		{name: "one message per level", cfg: Config{}, wantMessages: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.cfg, objs...)
			stream, err := h.client.Expand(testCtx(t), &lookaheadv1.ExpandRequest{Roots: []string{gen.RootID(0)}, Depth: 2})
			require.NoError(t, err)
			msgs, err := recvAll(t, stream)
			require.NoError(t, err)
			assert.Len(t, msgs, tc.wantMessages)
			got := collectExpansion(t, msgs)
			assert.Len(t, got.objects[0], 1)
			assert.Len(t, got.objects[1], 5)
			assert.Len(t, got.objects[2], 25)
		})
	}
}

func TestExpandInvalid(t *testing.T) {
	h := newHarness(t, Config{MaxIDs: 3, MaxDepth: 4, MaxObjects: 100}, expandGraph...)
	tests := []struct {
		name    string
		req     *lookaheadv1.ExpandRequest
		wantMsg string
	}{
		{name: "no roots", req: &lookaheadv1.ExpandRequest{}, wantMsg: "roots: none given"},
		{name: "empty root", req: &lookaheadv1.ExpandRequest{Roots: []string{"a", ""}}, wantMsg: "roots[1]: empty id"},
		{name: "long root", req: &lookaheadv1.ExpandRequest{Roots: []string{strings.Repeat("x", 1025)}}, wantMsg: "roots[0]: id of 1025 bytes exceeds the limit of 1024"},
		{name: "too many roots", req: &lookaheadv1.ExpandRequest{Roots: []string{"a", "b", "c", "d"}}, wantMsg: "roots: 4 ids exceed the limit of 3"},
		{name: "too many known ids", req: &lookaheadv1.ExpandRequest{Roots: []string{"a"}, KnownIds: []string{"a", "b", "c", "d"}}, wantMsg: "known_ids: 4 ids exceed"},
		{name: "empty known id", req: &lookaheadv1.ExpandRequest{Roots: []string{"a"}, KnownIds: []string{""}}, wantMsg: "known_ids[0]: empty id"},
		{name: "depth over limit", req: &lookaheadv1.ExpandRequest{Roots: []string{"a"}, Depth: 5}, wantMsg: "depth 5 exceeds the limit of 4"},
		{name: "max_objects over limit", req: &lookaheadv1.ExpandRequest{Roots: []string{"a"}, MaxObjects: 101}, wantMsg: "max_objects 101 exceeds the limit of 100"},
		{name: "empty field", req: &lookaheadv1.ExpandRequest{Roots: []string{"a"}, Fields: []string{"next", ""}}, wantMsg: "fields[1]: empty field name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stream, err := h.client.Expand(testCtx(t), tc.req)
			require.NoError(t, err)
			msgs, err := recvAll(t, stream)
			assert.Empty(t, msgs)
			assert.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			assert.Contains(t, status.Convert(err).Message(), tc.wantMsg)
		})
	}
}

// TestExpandServerCap checks that an Expand without max_objects stops at the
// server's MaxObjects.
func TestExpandServerCap(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 3}, expandGraph...)
	stream, err := h.client.Expand(testCtx(t), &lookaheadv1.ExpandRequest{Roots: []string{"r"}, Depth: 10})
	require.NoError(t, err)
	msgs, err := recvAll(t, stream)
	require.NoError(t, err)
	assert.Equal(t, levels(0, []string{"r"}, 1, []string{"x", "y"}), collectExpansion(t, msgs).objects)
}
