package originserver

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
)

func TestDecodeLinks(t *testing.T) {
	cases := []struct {
		name string
		o    *graph.Object
	}{
		{name: "no refs", o: &graph.Object{ID: "a", Version: 3, Type: "T", Payload: []byte("x")}},
		{name: "refs in order", o: node("a", "f", "b", "g", "c", "f", "a")},
		{name: "empty field name and no payload", o: &graph.Object{ID: "ü/1", Refs: []graph.Ref{{ID: "b"}}}},
		{name: "large payload skipped", o: &graph.Object{ID: "big", Payload: make([]byte, 1<<16), Refs: []graph.Ref{{Field: "f", ID: "z"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := proto.Marshal(graphpb.ToProto(tc.o))
			require.NoError(t, err)
			got, err := decodeLinks(b)
			require.NoError(t, err)
			assert.Equal(t, &graph.Object{ID: tc.o.ID, Refs: tc.o.Refs}, got)
		})
	}
}

func TestDecodeLinksRejectsBrokenBytes(t *testing.T) {
	cases := map[string][]byte{
		"length past the end":    {0x0a, 0x05, 'a'},
		"truncated tag":          {0x80},
		"broken ref":             {0x22, 0x02, 0x0a, 0x05},
		"truncated varint field": {0x10, 0x80},
		"unknown wire type (7)":  {0x0f},
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := decodeLinks(b)
			assert.ErrorContains(t, err, "decoding stored object")
		})
	}
}

// roundTrip encodes m and decodes it into a fresh message of its type, as a
// client receives it.
func roundTrip[T any, P interface {
	*T
	proto.Message
}](t *testing.T, m P) P {
	t.Helper()
	b, err := proto.Marshal(m)
	require.NoError(t, err)
	out := P(new(T))
	require.NoError(t, proto.Unmarshal(b, out))
	return out
}

// TestRepliesEncodeAsDecodedObjects checks that replies built from stored
// bytes are, on the wire, the replies built from decoded objects, and that a
// store without GetEncoded gets the same replies.
func TestRepliesEncodeAsDecodedObjects(t *testing.T) {
	objs := []*graph.Object{node("a", "f", "b"), node("b", "g", "c", "g", "gone"), node("c")}
	h := newHarness(t, Config{}, objs...)
	plain, err := New(struct{ Store }{h.st}, Config{}, nil) // hides GetEncoded
	require.NoError(t, err)
	want := graphpb.ToProtos(objs)
	servers := map[string]*Server{"stored bytes": h.srv, "a store without GetEncoded": plain}
	for name, srv := range servers {
		t.Run(name, func(t *testing.T) {
			resp, err := srv.BatchGet(testCtx(t), &lookaheadv1.OriginServiceBatchGetRequest{Ids: []string{"c", "x", "a", "b", "y"}})
			require.NoError(t, err)
			got := roundTrip(t, resp)
			assert.True(t, proto.Equal(&lookaheadv1.OriginServiceBatchGetResponse{
				Objects: []*lookaheadv1.Object{want[2], want[0], want[1]}, MissingIds: []string{"x", "y"},
			}, got), "got %v", got)

			stream := &fakeStream[lookaheadv1.ExpandResponse]{ctx: context.Background()}
			require.NoError(t, srv.Expand(&lookaheadv1.ExpandRequest{Roots: []string{"a"}, Depth: 5, KnownIds: []string{"b"}}, stream))
			var msgs []*lookaheadv1.ExpandResponse
			for _, m := range stream.sent {
				msgs = append(msgs, roundTrip(t, m))
			}
			wantMsgs := []*lookaheadv1.ExpandResponse{
				{Level: 0, Objects: want[:1]},
				{Level: 2, Objects: want[2:3], MissingIds: []string{"gone"}}, // b is known: walked through, not sent
			}
			require.Len(t, msgs, len(wantMsgs))
			for i := range msgs {
				assert.True(t, proto.Equal(wantMsgs[i], msgs[i]), "message %d: got %v", i, msgs[i])
			}
		})
	}
}
