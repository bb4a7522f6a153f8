package originserver

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lookahead-dev/lookahead/internal/origin"
)

// admit counts a call of rpc in flight until the caller calls done. A
// speculative call that would make more than Config.ShedSpeculativeAbove
// calls in flight is refused RESOURCE_EXHAUSTED instead, before any work:
// the sidecar that sent it backs off and nobody waits for it, while the
// calls an application waits on keep the origin's capacity.
func (s *Server) admit(ctx context.Context, rpc string) (done func(), err error) {
	n := s.inFlight.Add(1)
	if limit := s.cfg.ShedSpeculativeAbove; limit > 0 && n > int64(limit) && origin.IsSpeculative(ctx) {
		s.inFlight.Add(-1)
		s.m.shed.WithLabelValues(rpc).Inc()
		return nil, status.Errorf(codes.ResourceExhausted,
			"speculative call shed: %d calls in flight, the limit for speculation (--shed-speculative-above); demand is served first", limit)
	}
	return func() { s.inFlight.Add(-1) }, nil
}
