package server

import (
	"context"
	"math"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
	"github.com/lookahead-dev/lookahead/internal/near"
)

// SubscriberHeader is the metadata key under which a near-cache client
// sends the subscriber id of its Subscribe stream with its reads.
const SubscriberHeader = "lookahead-subscriber"

// maxClientName bounds SubscribeRequest.client_name.
const maxClientName = 128

// eventsPerMessage bounds the events of one SubscribeResponse.
const eventsPerMessage = 512

// EnableNear serves Subscribe from hub and tells it of the reads, writes and
// invalidations that pass through this server. Call it before serving.
func (s *Server) EnableNear(hub *near.Hub) { s.near = hub }

// track tells the hub that the caller, if it is a near-cache subscriber, is
// about to read ids: before the read, so no change after it is missed.
func (s *Server) track(ctx context.Context, ids []string) {
	if s.near == nil {
		return
	}
	if v := metadata.ValueFromIncomingContext(ctx, SubscriberHeader); len(v) > 0 {
		s.near.Track(v[0], ids)
	}
}

// NearReaders wraps fn for fetch.Fetcher.OnCaughtUp: it hears only of
// demands of near-cache subscribers. Their reads of pushed objects are
// answered in-process, in microseconds, and reach the sidecar only as
// reports, after them; so such an application outruns speculation that
// moves with what it reads (prefetch.Scheduler.CaughtUp). One that reads
// through the sidecar moves it with every read, a sidecar round trip
// apart, and is left to it.
func NearReaders(fn func(ctx context.Context, ids []string)) func(context.Context, []string) {
	return func(ctx context.Context, ids []string) {
		if len(metadata.ValueFromIncomingContext(ctx, SubscriberHeader)) > 0 {
			fn(ctx, ids)
		}
	}
}

// Subscribe implements lookaheadv1.SidecarServiceServer.
func (s *Server) Subscribe(req *lookaheadv1.SubscribeRequest, stream lookaheadv1.SidecarService_SubscribeServer) error {
	if s.near == nil {
		return status.Error(codes.Unimplemented, "subscribe: the near-cache hub is not enabled on this sidecar")
	}
	if req.GetBudgetBytes() > math.MaxInt64 {
		return status.Errorf(codes.InvalidArgument, "budget_bytes %d: at most %d", req.GetBudgetBytes(), int64(math.MaxInt64))
	}
	if n := len(req.GetClientName()); n > maxClientName {
		return status.Errorf(codes.InvalidArgument, "client_name: %d bytes, at most %d", n, maxClientName)
	}
	cfg := s.near.Config()
	sub := s.near.Subscribe(int64(req.GetBudgetBytes()), req.GetClientName())
	if sub == nil {
		return status.Errorf(codes.ResourceExhausted, "%d near-cache subscribers, the limit: retry later", cfg.MaxSubscribers)
	}
	defer s.near.Unsubscribe(sub)
	hello := &lookaheadv1.NearEvent{Event: &lookaheadv1.NearEvent_Hello{Hello: &lookaheadv1.NearHello{
		SubscriberId:    sub.ID,
		HeartbeatMillis: uint32(cfg.Heartbeat / time.Millisecond),
		MaxAgeMillis:    uint64(cfg.MaxAge / time.Millisecond),
	}}}
	if err := stream.Send(&lookaheadv1.SubscribeResponse{Events: []*lookaheadv1.NearEvent{hello}}); err != nil {
		return err
	}
	tick := time.NewTicker(cfg.Heartbeat / 2)
	defer tick.Stop()
	sent := true // since the last tick
	for {
		select {
		case <-stream.Context().Done():
			return status.FromContextError(stream.Context().Err()).Err()
		case <-sub.Gone():
			return status.Error(codes.ResourceExhausted, sub.Reason()+": flush the near cache and subscribe again")
		case <-sub.Wake():
			for evs := s.near.Take(sub, eventsPerMessage); len(evs) > 0; evs = s.near.Take(sub, eventsPerMessage) {
				events, err := nearEvents(evs)
				if err != nil {
					return err
				}
				if err := stream.Send(&lookaheadv1.SubscribeResponse{Events: events}); err != nil {
					return err
				}
				sent = true
			}
		case <-tick.C:
			if !sent {
				hb := &lookaheadv1.NearEvent{Event: &lookaheadv1.NearEvent_Heartbeat{Heartbeat: &lookaheadv1.NearHeartbeat{}}}
				if err := stream.Send(&lookaheadv1.SubscribeResponse{Events: []*lookaheadv1.NearEvent{hb}}); err != nil {
					return err
				}
				s.near.Heartbeat(sub)
			}
			sent = false
		}
	}
}

// nearEvents converts hub events to messages. A pushed object goes out as
// the bytes it came from the origin in (graph.Object.Wire) when it has
// them, like a GetGraph result (graphwire.go): the push's object field is
// written as an unknown field of the NearPush, which protobuf sends
// verbatim, so that a prefetched object pushed to near caches is never
// encoded again.
func nearEvents(evs []near.Event) ([]*lookaheadv1.NearEvent, error) {
	out := make([]*lookaheadv1.NearEvent, len(evs))
	for i, e := range evs {
		switch e.Kind {
		case near.KindInvalidation:
			out[i] = &lookaheadv1.NearEvent{Event: &lookaheadv1.NearEvent_Invalidation{Invalidation: &lookaheadv1.NearInvalidation{
				Id: e.ID, Version: e.Version, Deleted: e.Deleted}}}
		case near.KindPush:
			push, err := nearPush(e)
			if err != nil {
				return nil, err
			}
			out[i] = &lookaheadv1.NearEvent{Event: &lookaheadv1.NearEvent_Push{Push: push}}
		default:
			out[i] = &lookaheadv1.NearEvent{Event: &lookaheadv1.NearEvent_Flush{Flush: &lookaheadv1.NearFlush{Reason: e.Reason}}}
		}
	}
	return out, nil
}

var pushObject = graphpb.FieldNumber(&lookaheadv1.NearPush{}, "object")

// nearPush is the push of e.Object, its object field encoded by hand.
func nearPush(e near.Event) (*lookaheadv1.NearPush, error) {
	obj, err := graphpb.Encoded(e.Object)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encoding pushed object %q: %v", e.Object.ID, err)
	}
	raw := make([]byte, 0, protowire.SizeTag(pushObject)+protowire.SizeBytes(len(obj)))
	raw = protowire.AppendTag(raw, pushObject, protowire.BytesType)
	raw = protowire.AppendBytes(raw, obj)
	p := &lookaheadv1.NearPush{Reason: e.Reason}
	p.ProtoReflect().SetUnknown(protoreflect.RawFields(raw))
	return p, nil
}
