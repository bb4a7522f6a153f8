package server

import (
	"context"
	"math"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/near"
	"github.com/lookahead-dev/lookahead/internal/prefetch"
)

// SubscriberHeader is the metadata key under which a near-cache client
// sends the subscriber id of its Subscribe stream with its reads.
const SubscriberHeader = "lookahead-subscriber"

// ReportHeader marks a near-cache client's BatchGet that reports pushed
// objects the application read in-process (docs/near-cache.md): the
// sidecar reads them as it would any BatchGet, so that their use counts and
// moves speculation, but answers no objects, which the client would only
// decode and drop.
const ReportHeader = "lookahead-report"

// report reads the ids of a report of used pushes that the cache still
// holds, as any BatchGet would, and answers none of them, with the header
// ReportHeader: "read" so that a client that set the mark by mistake
// cannot take the empty answer for a real one (which names every id, in
// its results or its missing ids). Ids the cache no longer holds are not
// fetched: the application has them, and the origin round trip would
// bring nothing it reads.
func (s *Server) report(ctx context.Context, ids []string, h prefetch.Hint) (*lookaheadv1.BatchGetResponse, error) {
	_ = grpc.SetHeader(ctx, metadata.Pairs(ReportHeader, "read"))
	held := ids[:0:0]
	for _, id := range ids {
		if o, known := s.fetcher.Peek(id); known && o != nil {
			held = append(held, id)
		}
	}
	if len(held) > 0 {
		if _, err := s.get(ctx, held, h); err != nil {
			return nil, err
		}
	}
	return &lookaheadv1.BatchGetResponse{}, nil
}

// isReport reports whether ctx's call reports used pushes.
func isReport(ctx context.Context) bool {
	return len(metadata.ValueFromIncomingContext(ctx, ReportHeader)) > 0
}

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
// apart, and is left to it. Nor does it hear of reports: the application
// already holds what they name, and waits for none of it.
func NearReaders(fn func(ctx context.Context, ids []string)) func(context.Context, []string) {
	return func(ctx context.Context, ids []string) {
		if len(metadata.ValueFromIncomingContext(ctx, SubscriberHeader)) > 0 && !isReport(ctx) {
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
			for {
				evs, release := s.near.TakeHeld(sub, eventsPerMessage)
				if len(evs) == 0 {
					break
				}
				msg, err := nearMessage(evs)
				if err != nil {
					release()
					return err
				}
				if err := s.sendHeld(stream, msg, release); err != nil {
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

// sendHeld sends msg, a message of events taken from a subscriber's queue
// (near.Hub.TakeHeld), whose bytes the hub counts until release: as a
// reply is (replies.go), it is handed to gRPC as its encoded bytes, in a
// buffer whose release gives the hub's count back once gRPC has written
// it, or dropped it with its stream. A subscriber that does not read so
// holds its taken messages against the hub's limits, as its queue.
func (s *Server) sendHeld(stream grpc.ServerStream, msg *lookaheadv1.SubscribeResponse, release func()) error {
	if !s.codec.Load() { // without Codec, gRPC's own copies the bytes now
		err := stream.SendMsg(msg)
		release()
		return err
	}
	raw := msg.ProtoReflect().GetUnknown()
	for n := 1 << 10; mem.IsBelowBufferPoolingThreshold(cap(raw)); n *= 2 {
		raw = slices.Grow(raw, n) // a buffer gRPC pools, so that it calls Put (heldReply.buffers)
	}
	msg.ProtoReflect().SetUnknown(raw)
	s.held.put(msg, newHeldReply(raw, release))
	err := stream.SendMsg(msg)
	if r, ok := s.held.take(msg); ok { // never handed to the codec
		r.release.do()
	}
	return err
}
