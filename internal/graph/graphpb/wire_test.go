package graphpb_test

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
)

// fromWire is what the sidecar did before Decode: protobuf's decoding, then
// the conversion.
func fromWire(t *testing.T, b []byte) (*graph.Object, error) {
	t.Helper()
	var p lookaheadv1.Object
	if err := proto.Unmarshal(b, &p); err != nil {
		return nil, err
	}
	return graphpb.FromProto(&p), nil
}

// TestDecodeAsProtobuf: Decode reads every encoding as proto.Unmarshal and
// FromProto do, refuses what they refuse, and keeps the bytes as Wire.
func TestDecodeAsProtobuf(t *testing.T) {
	every, err := proto.Marshal(&lookaheadv1.Object{
		Id: "task-0", Version: 7, Type: "Task", Payload: []byte("hello"),
		Refs: []*lookaheadv1.Ref{{Field: "subtasks", Id: "task-0.1"}, {Field: "owner", Id: "task-0"}},
	})
	require.NoError(t, err)
	var odd []byte
	odd = protowire.AppendTag(odd, 1, protowire.BytesType) // id, then id again: the last wins
	odd = protowire.AppendString(odd, "first")
	odd = protowire.AppendTag(odd, 9, protowire.VarintType) // unknown field
	odd = protowire.AppendVarint(odd, 3)
	odd = protowire.AppendTag(odd, 2, protowire.BytesType) // version with the wrong wire type: unknown
	odd = protowire.AppendString(odd, "x")
	odd = protowire.AppendTag(odd, 1, protowire.BytesType)
	odd = protowire.AppendString(odd, "second")
	badUTF8 := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "\xff")
	var badRef []byte
	badRef = protowire.AppendTag(badRef, 4, protowire.BytesType)
	badRef = protowire.AppendBytes(badRef, protowire.AppendString(protowire.AppendTag(nil, 2, protowire.BytesType), "\xfe"))

	for name, b := range map[string][]byte{
		"every field": every, "empty": {}, "repeated and unknown fields": odd,
		"invalid UTF-8 id": badUTF8, "invalid UTF-8 ref id": badRef, "truncated": every[:len(every)-3],
	} {
		t.Run(name, func(t *testing.T) {
			want, wantErr := fromWire(t, b)
			got, err := graphpb.Decode(b)
			if wantErr != nil {
				assert.Error(t, err, "protobuf refuses it: %v", wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, b, got.Wire)
			got.Wire = nil
			if len(want.Payload) == 0 && len(got.Payload) == 0 {
				want.Payload, got.Payload = nil, nil // empty either way
			}
			assert.Equal(t, want, got)
		})
	}
}

// TestEncodedIsWireOrMarshal: an object with Wire is sent as those bytes,
// one without is encoded.
func TestEncodedIsWireOrMarshal(t *testing.T) {
	o := &graph.Object{ID: "a", Version: 2, Refs: []graph.Ref{{Field: "f", ID: "b"}}}
	b, err := graphpb.Encoded(o)
	require.NoError(t, err)
	d, err := graphpb.Decode(b)
	require.NoError(t, err)
	assert.Equal(t, "a", d.ID)
	assert.Equal(t, []graph.Ref{{Field: "f", ID: "b"}}, d.Refs)

	wire := []byte{0x0a, 0x01, 'z'} // id "z": not what the fields say
	b, err = graphpb.Encoded(&graph.Object{ID: "a", Wire: wire})
	require.NoError(t, err)
	assert.Equal(t, wire, b)
}

// The refs of a list share their field's string, decoded from the wire
// or converted from a protobuf message (the origin client's): whoever
// walks a hub's refs compares them by pointer. Another field, and the
// first one again, get their own.
func TestDecodedRefsShareTheirField(t *testing.T) {
	o := &graph.Object{ID: "u", Refs: []graph.Ref{{Field: "friends", ID: "a"}, {Field: "friends", ID: "b"}, {Field: "posts", ID: "p"}, {Field: "friends", ID: "c"}}}
	b, err := proto.Marshal(graphpb.ToProto(o))
	require.NoError(t, err)
	for name, decode := range map[string]func([]byte) (*graph.Object, error){
		"Decode": graphpb.Decode,
		"FromProto": func(b []byte) (*graph.Object, error) {
			var p lookaheadv1.Object
			err := proto.Unmarshal(b, &p)
			return graphpb.FromProto(&p), err
		},
	} {
		got, err := decode(b)
		require.NoError(t, err, name)
		require.Equal(t, o.Refs, got.Refs, name)
		assert.Same(t, unsafe.StringData(got.Refs[0].Field), unsafe.StringData(got.Refs[1].Field), "%s: one list's field: one string", name)
		assert.NotSame(t, unsafe.StringData(got.Refs[1].Field), unsafe.StringData(got.Refs[3].Field), "%s: after another field: a copy of its own", name)
	}
}
