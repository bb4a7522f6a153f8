package server

import (
	"context"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// misses is the sidecar-wide admission of Gets and BatchGets that need the
// origin. Without it every request in progress on every connection is a
// handler goroutine, and an origin answer makes hundreds of them runnable at
// once: a hit on another connection waits for a core behind them, since
// Go's scheduler has no priorities (BenchmarkHitDuringFlood, 40
// connections). --max-concurrent-streams bounds one connection only. So a
// request with an id the cache does not hold takes one of running places
// before it fetches; beyond them it waits, parked, not runnable, and
// beyond waiting more it is refused RESOURCE_EXHAUSTED at once. A request
// the cache answers whole takes no place and never waits. The decision
// needs the request's ids, so it is made in the handler, after decoding,
// before any fetch: a gRPC tap handle runs earlier but sees only the
// method, and would refuse hits with misses. One gap: while the change
// stream is down past --watch-grace the fetcher refetches what the cache
// holds, and such requests take no place.
type misses struct {
	places         *semaphore.Weighted
	running, limit int64
	waiting        atomic.Int64
	maxWaiting     int64
	admitted       atomic.Int64
}

func newMisses(running, waiting int) *misses {
	return &misses{places: semaphore.NewWeighted(int64(running)), limit: int64(running), maxWaiting: int64(waiting)}
}

// peeker says what the cache holds (Fetcher.Peek).
type peeker interface {
	Peek(id string) (*graph.Object, bool)
}

// admit takes a place for a request of ids unless the cache holds every
// one (or knows it does not exist), waiting for one until ctx ends; done
// gives it back.
func (m *misses) admit(ctx context.Context, ids []string, c peeker) (done func(), err error) {
	if allHeld(ids, c) {
		return func() {}, nil
	}
	if !m.places.TryAcquire(1) {
		if m.waiting.Add(1) > m.maxWaiting {
			m.waiting.Add(-1)
			return nil, status.Errorf(codes.ResourceExhausted, "%d requests for uncached objects wait for one of %d places (--max-origin-requests), the limit (--max-origin-waiting): retry later", m.maxWaiting, m.limit)
		}
		err := m.places.Acquire(ctx, 1)
		m.waiting.Add(-1)
		if err != nil {
			return nil, toStatus(ctx.Err())
		}
	}
	m.admitted.Add(1)
	return func() {
		m.admitted.Add(-1)
		m.places.Release(1)
	}, nil
}

func allHeld(ids []string, c peeker) bool {
	for _, id := range ids {
		if _, known := c.Peek(id); !known {
			return false
		}
	}
	return true
}

// OriginRequests is how many Gets and BatchGets that need the origin are
// being served now, and how many wait for a place
// (lookahead_origin_requests).
func (s *Server) OriginRequests() (running, waiting int64) {
	return s.misses.admitted.Load(), s.misses.waiting.Load()
}
