package server

import (
	"context"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/fetch"
)

// streamMemory is the sidecar-wide budget of the bytes replies hold for
// their clients: a GetGraph message's, or a Get's or BatchGet's of more
// than 1 KiB, from before it is encoded until gRPC has written it to the
// connection (replies.go). A client that does not read keeps its streams'
// replies queued in gRPC; without a budget each of them could hold up to
// the largest message, as many as streams are open. A reply waits for room
// (until its deadline); a new walk is refused while the budget is spent,
// as beyond MaxWalks. A reply of at most 1 KiB takes nothing from it: a
// hit on a small object never waits.
type streamMemory struct {
	sem   *semaphore.Weighted
	limit int64
	held  atomic.Int64
}

func newStreamMemory(limit int64) *streamMemory {
	return &streamMemory{sem: semaphore.NewWeighted(limit), limit: limit}
}

// spent says whether the budget is all held, or others are waiting for it.
func (m *streamMemory) spent() bool {
	if !m.sem.TryAcquire(1) {
		return true
	}
	m.sem.Release(1)
	return false
}

// hold takes n bytes, waiting for others to release them until ctx ends;
// a message larger than the whole budget takes all of it.
func (m *streamMemory) hold(ctx context.Context, n int64) (release func(), err error) {
	n = min(max(n, 1), m.limit)
	if err := m.sem.Acquire(ctx, n); err != nil {
		return nil, err
	}
	m.held.Add(n)
	return func() {
		m.held.Add(-n)
		m.sem.Release(n)
	}, nil
}

// StreamMemory is the bytes replies hold now, of Config.StreamBytes
// (lookahead_stream_memory_bytes).
func (s *Server) StreamMemory() int64 { return s.streams.held.Load() }

// admitWalk takes one of MaxWalks places for a GetGraph stream, or refuses
// it RESOURCE_EXHAUSTED; done gives the place back.
func (s *Server) admitWalk() (done func(), err error) {
	select {
	case s.walks <- struct{}{}:
	default:
		return nil, status.Errorf(codes.ResourceExhausted, "%d GetGraph streams are being served, the limit (--max-walks): retry later", s.cfg.MaxWalks)
	}
	if s.streams.spent() {
		<-s.walks
		return nil, status.Errorf(codes.ResourceExhausted, "replies not yet read by their clients hold %d bytes, the limit (--stream-memory-bytes): retry later", s.cfg.StreamBytes)
	}
	return func() { <-s.walks }, nil
}

// sendLevel sends what arrived of one level of a walk in messages of at most ChunkObjects
// objects and about ChunkBytes bytes, each held against the stream memory
// budget from before it is built until gRPC has taken it.
func (s *Server) sendLevel(stream lookaheadv1.SidecarService_GetGraphServer, rs []fetch.Result) error {
	for len(rs) > 0 {
		n := s.chunk(rs)
		msg := &lookaheadv1.GetGraphResponse{}
		if err := s.reply(stream.Context(), msg, resultsReply(graphResults, rs[:n], nil)); err != nil {
			return err
		}
		if err := stream.Send(msg); err != nil {
			return err
		}
		rs = rs[n:]
	}
	return nil
}

// chunk counts the objects at the start of rs that make one message.
func (s *Server) chunk(rs []fetch.Result) (n int) {
	var bytes int64
	for n < len(rs) && n < s.cfg.ChunkObjects && bytes < int64(s.cfg.ChunkBytes) {
		bytes += rs[n].Object.Size()
		n++
	}
	return n
}
