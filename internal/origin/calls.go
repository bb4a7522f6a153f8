package origin

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/resilience"
)

// CallStats counts the round trips that judged the origin, since the
// client was made: those it answered well and those that failed for its
// sake (UNAVAILABLE, INTERNAL, UNKNOWN or DATA_LOSS, no answer
// within Config.Timeout, a malformed or incomplete reply). Answers such
// as NOT_FOUND count as good; the caller's own deadlines and cancellations
// count as neither.
type CallStats struct {
	OK, Failed uint64
	Streak     uint64 // failures since the last good round trip
	Last       error  // the last failure; nil before the first
}

// Sub is what happened between before and s; Streak and Last are s's.
func (s CallStats) Sub(before CallStats) CallStats {
	return CallStats{OK: s.OK - before.OK, Failed: s.Failed - before.Failed, Streak: s.Streak, Last: s.Last}
}

// callLog keeps a client's CallStats.
type callLog struct {
	mu sync.Mutex // protects s
	s  CallStats
}

func (l *callLog) record(ok bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ok {
		l.s.OK++
		l.s.Streak = 0
		return
	}
	l.s.Failed++
	l.s.Streak++
	l.s.Last = err
}

// demote turns a round trip counted good into a failure: its reply was
// refused after the round trip ended.
func (l *callLog) demote(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.s.OK--
	l.s.Failed++
	l.s.Streak++ // the success it was counted as had reset it: a streak of at least 1 either way
	l.s.Last = err
}

// judge classifies one round trip for CallStats: counted, and good or not.
func judge(err error, o resilience.Outcome) (counted, ok bool) {
	if o == resilience.Failure || errors.Is(err, ErrMalformedReply) || errors.Is(err, ErrIncompleteReply) {
		return true, false
	}
	if st, fromOrigin := status.FromError(err); fromOrigin { // not an error of the caller's own fn
		switch st.Code() {
		case codes.Internal, codes.Unknown, codes.DataLoss: // not RESOURCE_EXHAUSTED: an origin may shed speculative calls with it
			return true, false
		}
	}
	return o == resilience.Success, true
}

// Calls returns the client's CallStats so far.
func (c *Client) Calls() CallStats {
	c.calls.mu.Lock()
	defer c.calls.mu.Unlock()
	return c.calls.s
}

// Probe makes one empty BatchGet through the circuit breaker, counted like
// any round trip: evidence of whether calls succeed when no caller makes
// any. While the breaker is open it is refused without a round trip
// (ErrCircuitOpen); after the cool-down it is the half-open probe.
func (c *Client) Probe(ctx context.Context) error {
	err := c.roundTrip(ctx, "BatchGet", 0, func(ctx context.Context) error {
		_, err := c.rpc.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{})
		return err
	})
	if err != nil {
		return fmt.Errorf("origin probe: %w", err)
	}
	return nil
}
