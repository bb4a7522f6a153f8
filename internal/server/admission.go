package server

import (
	"context"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// misses is the sidecar-wide admission of Gets and BatchGets that need the
// origin. Without it every request in progress on every connection is a
// handler goroutine, and an origin answer makes hundreds of them runnable at
// once: a hit on another connection waits for a core behind them, since
// Go's scheduler has no priorities (BenchmarkHitDuringFlood, 40
// connections). --max-concurrent-streams bounds one connection only. So a
// request with an id the cache does not hold takes one of the places
// before it fetches; beyond them it waits, parked, not runnable, and
// beyond waiting more it is refused RESOURCE_EXHAUSTED at once. A request
// the cache answers whole takes no place and never waits. The decision
// needs to know what the cache holds, so the fetcher makes it, after its
// cache lookup and before it asks the origin (fetch.Fetcher.SetAdmission): a
// gRPC tap handle runs earlier but sees only the method, and would refuse
// hits with misses.
type misses struct {
	places     *semaphore.Weighted
	limit      int64
	waiting    atomic.Int64
	maxWaiting int64
	admitted   atomic.Int64
}

func newMisses(running, waiting int) *misses {
	return &misses{places: semaphore.NewWeighted(int64(running)), limit: int64(running), maxWaiting: int64(waiting)}
}

// admit takes a place for a request that needs the origin, waiting for
// one until ctx ends; release gives it back (a fetch.Admission: the
// fetcher calls it only for a request the cache did not answer whole).
func (m *misses) admit(ctx context.Context) (release func(), err error) {
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

// OriginRequests is how many Gets and BatchGets that need the origin are
// being served now, and how many wait for a place
// (lookahead_origin_requests).
func (s *Server) OriginRequests() (running, waiting int64) {
	return s.misses.admitted.Load(), s.misses.waiting.Load()
}
