package graphpb_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
)

func TestRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		o    *graph.Object
		p    *lookaheadv1.Object
	}{
		{name: "nil stays nil"},
		{name: "empty object", o: &graph.Object{}, p: &lookaheadv1.Object{}},
		{
			name: "every field",
			o: &graph.Object{
				ID: "task-0", Version: 7, Type: "Task", Payload: []byte("hello"),
				Refs: []graph.Ref{{Field: "subtasks", ID: "task-0.1"}, {Field: "owner", ID: "task-0"}},
			},
			p: &lookaheadv1.Object{
				Id: "task-0", Version: 7, Type: "Task", Payload: []byte("hello"),
				Refs: []*lookaheadv1.Ref{{Field: "subtasks", Id: "task-0.1"}, {Field: "owner", Id: "task-0"}},
			},
		},
		{
			name: "refs keep their order and duplicates",
			o:    &graph.Object{ID: "a", Refs: []graph.Ref{{Field: "x", ID: "b"}, {Field: "x", ID: "b"}, {ID: "c"}}},
			p:    &lookaheadv1.Object{Id: "a", Refs: []*lookaheadv1.Ref{{Field: "x", Id: "b"}, {Field: "x", Id: "b"}, {Id: "c"}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := graphpb.ToProto(tc.o)
			assert.True(t, proto.Equal(tc.p, p), "ToProto: got %v, want %v", p, tc.p)
			assert.Equal(t, tc.o, graphpb.FromProto(tc.p))
			assert.Equal(t, tc.o, graphpb.FromProto(graphpb.ToProto(tc.o)))

			if tc.p != nil { // and through the wire
				b, err := proto.Marshal(p)
				require.NoError(t, err)
				var back lookaheadv1.Object
				require.NoError(t, proto.Unmarshal(b, &back))
				got := graphpb.FromProto(&back)
				assert.Equal(t, tc.o.ID, got.ID)
				assert.Equal(t, tc.o.Refs, got.Refs)
				assert.Equal(t, tc.o.Size(), got.Size())
			}
		})
	}
}

func TestNoRefsStayNil(t *testing.T) {
	// A nil Refs slice and no allocation for objects without edges, both ways.
	assert.Nil(t, graphpb.FromProto(&lookaheadv1.Object{Id: "a", Refs: []*lookaheadv1.Ref{}}).Refs)
	assert.Nil(t, graphpb.ToProto(&graph.Object{ID: "a", Refs: []graph.Ref{}}).Refs)
}

func TestPayloadIsShared(t *testing.T) {
	payload := []byte("payload")
	p := graphpb.ToProto(&graph.Object{ID: "a", Payload: payload})
	assert.Same(t, &payload[0], &p.Payload[0], "ToProto shares the payload")
	o := graphpb.FromProto(p)
	assert.Same(t, &payload[0], &o.Payload[0], "FromProto shares the payload")
}

func TestSlices(t *testing.T) {
	a := &graph.Object{ID: "a", Version: 1}
	b := &graph.Object{ID: "b", Refs: []graph.Ref{{Field: "f", ID: "a"}}}
	cases := []struct {
		name string
		objs []*graph.Object
	}{
		{name: "nil", objs: nil},
		{name: "empty", objs: []*graph.Object{}},
		{name: "order and nil entries kept", objs: []*graph.Object{b, nil, a}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ps := graphpb.ToProtos(tc.objs)
			require.Len(t, ps, len(tc.objs))
			for i, o := range tc.objs {
				assert.True(t, proto.Equal(graphpb.ToProto(o), ps[i]), "index %d", i)
			}
			for i := range tc.objs {
				assert.Equal(t, tc.objs[i], graphpb.FromProto(ps[i]))
			}
		})
	}
}
