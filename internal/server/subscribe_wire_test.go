package server

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
	"github.com/lookahead-dev/lookahead/internal/near"
)

// TestPushedObjectsAreTheOriginsBytes: a push reads back as the object it
// pushes, whether the object kept the bytes it came from the origin in
// (sent on verbatim) or was built in the sidecar (encoded), and its reason
// travels with it.
func TestPushedObjectsAreTheOriginsBytes(t *testing.T) {
	built := &graph.Object{ID: "user-1", Version: 3, Type: "user", Payload: []byte("ada"),
		Refs: []graph.Ref{{Field: "friends", ID: "user-2"}, {Field: "friends", ID: "user-3"}}}
	encoded, err := proto.Marshal(graphpb.ToProto(built))
	require.NoError(t, err)
	// The origin's bytes carry a field this sidecar does not know (99):
	// only a push that sends them on verbatim keeps it.
	wire := protowire.AppendVarint(protowire.AppendTag(slices.Clone(encoded), 99, protowire.VarintType), 7)
	decoded, err := graphpb.Decode(wire)
	require.NoError(t, err)
	require.NotNil(t, decoded.Wire)

	for name, tc := range map[string]struct {
		o    *graph.Object
		want []byte
	}{"origin's bytes": {decoded, wire}, "built here": {built, encoded}} {
		o := tc.o
		m, err := nearMessage([]near.Event{{Kind: near.KindPush, Object: o, Reason: "expand"}})
		require.NoError(t, err, name)
		b, err := proto.Marshal(m)
		require.NoError(t, err, name)
		assert.True(t, bytes.Contains(b, tc.want), "%s: the object's encoding is in the message", name)
		var got lookaheadv1.SubscribeResponse
		require.NoError(t, proto.Unmarshal(b, &got), name)
		require.Len(t, got.GetEvents(), 1, name)
		push := got.GetEvents()[0].GetPush()
		require.NotNil(t, push, name)
		known := proto.Clone(push.GetObject())
		known.ProtoReflect().SetUnknown(nil) // field 99: compared as bytes above
		assert.True(t, proto.Equal(graphpb.ToProto(built), known), "%s: %v", name, push.GetObject())
		assert.Equal(t, "expand", push.GetReason(), name)
	}
}

// TestNearMessageKeepsTheEventsInOrder: a message of every kind of queued
// event reads back as those events, in queue order, each with its fields.
func TestNearMessageKeepsTheEventsInOrder(t *testing.T) {
	o := &graph.Object{ID: "user-1", Version: 3, Type: "user", Payload: []byte("ada")}
	m, err := nearMessage([]near.Event{
		{Kind: near.KindInvalidation, ID: "user-2", Version: 7, Deleted: true},
		{Kind: near.KindPush, Object: o, Reason: "prefetch"},
		{Kind: near.KindInvalidation, ID: "user-1", Version: 4},
		{Kind: near.KindFlush, Reason: "sidecar cache cleared"},
		{Kind: near.KindPush, Object: o},
	})
	require.NoError(t, err)
	b, err := proto.Marshal(m)
	require.NoError(t, err)
	var got lookaheadv1.SubscribeResponse
	require.NoError(t, proto.Unmarshal(b, &got))
	want := &lookaheadv1.SubscribeResponse{Events: []*lookaheadv1.NearEvent{
		{Event: &lookaheadv1.NearEvent_Invalidation{Invalidation: &lookaheadv1.NearInvalidation{Id: "user-2", Version: 7, Deleted: true}}},
		{Event: &lookaheadv1.NearEvent_Push{Push: &lookaheadv1.NearPush{Object: graphpb.ToProto(o), Reason: "prefetch"}}},
		{Event: &lookaheadv1.NearEvent_Invalidation{Invalidation: &lookaheadv1.NearInvalidation{Id: "user-1", Version: 4}}},
		{Event: &lookaheadv1.NearEvent_Flush{Flush: &lookaheadv1.NearFlush{Reason: "sidecar cache cleared"}}},
		{Event: &lookaheadv1.NearEvent_Push{Push: &lookaheadv1.NearPush{Object: graphpb.ToProto(o)}}},
	}}
	assert.True(t, proto.Equal(want, &got), "got %v", &got)
}

// BenchmarkPushEncoding: a message of pushes of objects that came from the
// origin, encoded into one buffer with each object's bytes sent on (what
// Subscribe does) against converted to protobuf messages and encoded again
// (what it did first).
func BenchmarkPushEncoding(b *testing.B) {
	evs := make([]near.Event, eventsPerMessage)
	for i := range evs {
		o := &graph.Object{ID: fmt.Sprintf("task-%d", i), Version: 1, Type: "task", Payload: make([]byte, 10),
			Refs: []graph.Ref{{Field: "sub", ID: "a"}, {Field: "sub", ID: "b"}, {Field: "sub", ID: "c"}, {Field: "sub", ID: "d"}, {Field: "sub", ID: "e"}}}
		wire, err := proto.Marshal(graphpb.ToProto(o))
		require.NoError(b, err)
		if evs[i].Object, err = graphpb.Decode(wire); err != nil {
			b.Fatal(err)
		}
		evs[i].Kind, evs[i].Reason = near.KindPush, "expand"
	}
	send := func(b *testing.B, message func() *lookaheadv1.SubscribeResponse) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := proto.Marshal(message()); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/object")
	}
	b.Run("wire", func(b *testing.B) {
		send(b, func() *lookaheadv1.SubscribeResponse {
			m, err := nearMessage(evs)
			if err != nil {
				b.Fatal(err)
			}
			return m
		})
	})
	b.Run("proto", func(b *testing.B) {
		send(b, func() *lookaheadv1.SubscribeResponse {
			out := make([]*lookaheadv1.NearEvent, len(evs))
			for i, e := range evs {
				out[i] = &lookaheadv1.NearEvent{Event: &lookaheadv1.NearEvent_Push{Push: &lookaheadv1.NearPush{
					Object: graphpb.ToProto(e.Object), Reason: e.Reason}}}
			}
			return &lookaheadv1.SubscribeResponse{Events: out}
		})
	})
}
