package server

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
	"github.com/lookahead-dev/lookahead/internal/near"
)

// A Subscribe message is encoded here into one buffer, as a GetGraph
// message is (graphwire.go): each pushed object as the bytes it came from
// the origin in (graph.Object.Wire) when it has them, and the events as
// the message's unknown fields, which protobuf writes out verbatim. So a
// prefetched object pushed to near caches is never encoded again, and a
// message of pushes costs no protobuf message per event.

var (
	subscribeEvents = graphpb.FieldNumber(&lookaheadv1.SubscribeResponse{}, "events")
	eventPush       = graphpb.FieldNumber(&lookaheadv1.NearEvent{}, "push")
	pushObject      = graphpb.FieldNumber(&lookaheadv1.NearPush{}, "object")
	pushReason      = graphpb.FieldNumber(&lookaheadv1.NearPush{}, "reason")
)

// eventOverhead bounds what an event adds to its object's bytes: the
// tags and lengths of the event, the push and the object (the reason is
// counted on its own).
const eventOverhead = 16

// nearMessage is the message carrying evs, in order, encoded into one
// buffer sized up front (from an object's wire bytes when it has them,
// else from its Size, which is more), so that it is not grown and copied
// event by event.
func nearMessage(evs []near.Event) (*lookaheadv1.SubscribeResponse, error) {
	n := 0
	for _, e := range evs {
		switch {
		case e.Kind != near.KindPush:
		case e.Object.Wire != nil:
			n += len(e.Object.Wire) + len(e.Reason) + eventOverhead
		default:
			n += int(e.Object.Size()) + len(e.Reason) + eventOverhead // more than its encoding
		}
	}
	raw := make([]byte, 0, n)
	for _, e := range evs {
		var err error
		if raw, err = appendEvent(raw, e); err != nil {
			return nil, err
		}
	}
	m := &lookaheadv1.SubscribeResponse{}
	m.ProtoReflect().SetUnknown(protoreflect.RawFields(raw))
	return m, nil
}

// appendEvent appends e as one more event: a push encoded by hand, the
// rarer invalidations and flushes by protobuf.
func appendEvent(b []byte, e near.Event) ([]byte, error) {
	if e.Kind != near.KindPush {
		ev, err := proto.Marshal(nearEvent(e))
		if err != nil {
			return nil, status.Errorf(codes.Internal, "encoding a near event: %v", err)
		}
		b = protowire.AppendTag(b, subscribeEvents, protowire.BytesType)
		return protowire.AppendBytes(b, ev), nil
	}
	obj, err := graphpb.Encoded(e.Object)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encoding pushed object %q: %v", e.Object.ID, err)
	}
	push := protowire.SizeTag(pushObject) + protowire.SizeBytes(len(obj))
	if e.Reason != "" {
		push += protowire.SizeTag(pushReason) + protowire.SizeBytes(len(e.Reason))
	}
	b = protowire.AppendTag(b, subscribeEvents, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(protowire.SizeTag(eventPush)+protowire.SizeBytes(push)))
	b = protowire.AppendTag(b, eventPush, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(push))
	b = protowire.AppendTag(b, pushObject, protowire.BytesType)
	b = protowire.AppendBytes(b, obj)
	if e.Reason != "" {
		b = protowire.AppendTag(b, pushReason, protowire.BytesType)
		b = protowire.AppendString(b, e.Reason)
	}
	return b, nil
}

// nearEvent is an invalidation's or a flush's event message.
func nearEvent(e near.Event) *lookaheadv1.NearEvent {
	if e.Kind == near.KindInvalidation {
		return &lookaheadv1.NearEvent{Event: &lookaheadv1.NearEvent_Invalidation{Invalidation: &lookaheadv1.NearInvalidation{
			Id: e.ID, Version: e.Version, Deleted: e.Deleted}}}
	}
	return &lookaheadv1.NearEvent{Event: &lookaheadv1.NearEvent_Flush{Flush: &lookaheadv1.NearFlush{Reason: e.Reason}}}
}
