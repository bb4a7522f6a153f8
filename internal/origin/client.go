// Package origin is the sidecar's client for an origin object service.
package origin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
	"github.com/lookahead-dev/lookahead/internal/metrics"
	"github.com/lookahead-dev/lookahead/internal/resilience"
)

// Errors callers may branch on.
var (
	// ErrCircuitOpen: the call was refused without a round trip because
	// the origin failed repeatedly and the breaker's cool-down is running.
	// The error also wraps the origin's last failure, whose gRPC status is
	// UNAVAILABLE.
	ErrCircuitOpen = errors.New("origin circuit open")
	// ErrMalformedReply: the origin sent an object for an asked-for id that
	// cannot be cached (too large, or with an invalid ref). Nothing of that
	// reply is returned.
	ErrMalformedReply = errors.New("origin reply malformed")
	// ErrIncompleteReply: the origin left an asked-for id out of its
	// BatchGet reply, neither sending it nor listing it missing. Its
	// absence was never said, so the caller must neither cache nor
	// remember it: the call fails, and nothing of the reply is returned.
	ErrIncompleteReply = errors.New("origin reply incomplete")
	// ErrObjectTooLarge: a write was refused before any round trip because
	// the object is larger than Config.MaxObjectBytes; stored, it could
	// never be read back through this client.
	ErrObjectTooLarge = errors.New("object too large")
)

// Client calls one origin. Every method is one logical call; each attempt
// is one round trip, counted in lookahead_origin_round_trips_total and timed
// in lookahead_origin_round_trip_duration_seconds. Reads that fail
// UNAVAILABLE are retried (Config.Retries) and every round trip passes a
// circuit breaker (Config.Breaker*). Batching and parallelism are the
// caller's business (the prefetch engine's).
type Client struct {
	rpc     lookaheadv1.OriginServiceClient
	health  healthpb.HealthClient
	m       *metrics.Set
	cfg     Config
	retry   resilience.Retry
	breaker *resilience.Breaker // nil when disabled
	calls   callLog
	// answered counts round trips the origin answered (resilience.Success):
	// a failure is evidence against the origin only if none was answered
	// while it was under way (see roundTrip).
	answered atomic.Uint64
	// maxIDs and maxObjects are the max_ids and max_objects the origin
	// last reported (Describe); 0 = none.
	maxIDs, maxObjects atomic.Int64
}

// MaxKnown is how many known_ids one Expand may carry, as the origin last
// reported (Describe's max_ids, asked at every health probe); 0 = not
// reported: then the contract's minimum holds (docs/origin.md).
func (c *Client) MaxKnown() int { return int(c.maxIDs.Load()) }

// New wraps a connection to an origin.
func New(cc grpc.ClientConnInterface, cfg Config, m *metrics.Set) (*Client, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Client{
		rpc:    lookaheadv1.NewOriginServiceClient(cc),
		health: healthpb.NewHealthClient(cc),
		m:      m,
		cfg:    cfg,
		retry:  resilience.Retry{Retries: cfg.Retries, Base: cfg.RetryBase, Max: cfg.RetryMax, Clock: cfg.Clock},
	}
	if cfg.BreakerFailures > 0 {
		b, err := resilience.NewBreaker(resilience.BreakerConfig{
			Failures: cfg.BreakerFailures, Cooldown: cfg.BreakerCooldown, Clock: cfg.Clock,
			OnState: func(s resilience.State) {
				m.OriginBreakerState.Set(float64(s))
				m.OriginRouteBreakerState.WithLabelValues(cfg.Route).Set(float64(s))
			},
		})
		if err != nil {
			return nil, err
		}
		c.breaker = b
	}
	return c, nil
}

func (c *Client) observe(ctx context.Context, rpc string, ids int, start time.Time, err error) {
	elapsed := time.Since(start)
	code := status.Code(err).String()
	c.m.OriginRoundTrips.WithLabelValues(rpc, code).Inc()
	c.m.OriginRouteRoundTrips.WithLabelValues(c.cfg.Route, rpc, code).Inc()
	c.m.OriginDuration.WithLabelValues(rpc).Observe(elapsed.Seconds())
	if c.cfg.Observe != nil {
		c.cfg.Observe(RoundTrip{RPC: rpc, IDs: ids, Speculative: isSpeculation(ctx), Elapsed: elapsed, Err: err})
	}
}

// timedOut says whether a round trip that took elapsed ended at Timeout.
// The deadline travels to the origin, whose timer may fire first: its reset
// then arrives as DEADLINE_EXCEEDED before actx reports anything, after all
// but a sliver of Timeout. A DEADLINE_EXCEEDED answered sooner is the
// origin's own (a deadline of its downstream), not ours.
func (c *Client) timedOut(actx context.Context, err error, elapsed time.Duration) bool {
	if errors.Is(actx.Err(), context.DeadlineExceeded) {
		return true
	}
	return status.Code(err) == codes.DeadlineExceeded && elapsed >= c.cfg.Timeout*9/10
}

// roundTrip makes one attempt of rpc for ids ids through the breaker,
// counted and timed. A refused attempt makes no round trip and returns
// ErrCircuitOpen.
func (c *Client) roundTrip(ctx context.Context, rpc string, ids int, f func(context.Context) error) error {
	var ticket resilience.Ticket
	if c.breaker != nil {
		t, err := c.breaker.Allow()
		if err != nil {
			c.m.OriginBreakerRejections.WithLabelValues(rpc).Inc()
			var open *resilience.OpenError
			if errors.As(err, &open) && open.Cause != nil {
				return fmt.Errorf("%w: last failure: %w", ErrCircuitOpen, open.Cause)
			}
			return ErrCircuitOpen
		}
		ticket = t
	}
	// ours says whether Timeout, not the caller's deadline, bounds this
	// round trip: then a DEADLINE_EXCEEDED means the origin did not answer.
	actx, cancel, ours := ctx, context.CancelFunc(func() {}), false
	if c.cfg.Timeout > 0 {
		d, has := ctx.Deadline()
		ours = !has || time.Until(d) > c.cfg.Timeout
		actx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
	}
	defer cancel()
	inFlight := c.m.OriginInFlight.WithLabelValues(rpc)
	inFlight.Inc()
	start, answeredBefore := time.Now(), c.answered.Load()
	err := f(actx)
	inFlight.Dec()
	c.observe(ctx, rpc, ids, start, err)
	o := outcome(err)
	if ours && ctx.Err() == nil && c.timedOut(actx, err, time.Since(start)) {
		o = resilience.Failure // our timeout, not the caller's: the origin did not answer
	}
	if counted, ok := judge(err, o); counted {
		c.calls.record(ok, err)
	}
	switch {
	case o == resilience.Success:
		c.answered.Add(1)
	case o == resilience.Failure && c.answered.Load() != answeredBefore:
		// The origin answered another call while this one failed: one of
		// its replicas went away (its calls all cut at once), not the
		// origin. The retry goes to another replica; counting these would
		// open the circuit for everyone on a replica's restart.
		o = resilience.Ignore
	}
	if c.breaker != nil {
		c.breaker.Record(ticket, o, err)
	}
	return err
}

// outcome judges the origin by one round trip's error. Only UNAVAILABLE
// says the origin cannot be reached; any other answer from it proves it up.
// A deadline or cancellation proves nothing: it is usually the caller's,
// and one impatient caller must not open the circuit for everyone.
func outcome(err error) resilience.Outcome {
	switch status.Code(err) {
	case codes.OK, codes.NotFound, codes.InvalidArgument, codes.FailedPrecondition, codes.AlreadyExists,
		codes.Aborted, codes.OutOfRange, codes.Unimplemented, codes.PermissionDenied, codes.Unauthenticated:
		return resilience.Success
	case codes.Unavailable:
		return resilience.Failure
	}
	return resilience.Ignore
}

// retrying runs attempt under the retry policy: again after UNAVAILABLE,
// never after a refusal by the breaker.
func (c *Client) retrying(ctx context.Context, rpc string, attempt func(context.Context) error) error {
	return c.retry.Do(ctx, attempt, retryable, func() { c.m.OriginRetries.WithLabelValues(rpc).Inc() })
}

func retryable(err error) bool {
	return !errors.Is(err, ErrCircuitOpen) && !errors.Is(err, errStreamStarted) && status.Code(err) == codes.Unavailable
}

// BatchGet fetches ids in one round trip (more when retried). What the
// origin sends is checked before anything is returned, each problem counted
// in lookahead_origin_malformed_total: objects and missing ids that were not
// asked for, that repeat, or that have an invalid id are dropped; an
// asked-for id that comes back as an object that cannot be cached (larger
// than Config.MaxObjectBytes, or with an invalid ref) fails the call with
// ErrMalformedReply; an asked-for id that comes back neither as an object
// nor as missing fails it with ErrIncompleteReply.
func (c *Client) BatchGet(ctx context.Context, ids []string) (found []*graph.Object, missing []string, err error) {
	var resp *lookaheadv1.OriginServiceBatchGetResponse
	err = c.retrying(ctx, "BatchGet", func(ctx context.Context) error {
		return c.roundTrip(ctx, "BatchGet", len(ids), func(ctx context.Context) error {
			codec, limit := c.newReplyCodec(1), c.batchRecvLimit(len(ids))
			var err error
			resp, err = c.rpc.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: ids}, codec.callOptions(limit)...)
			if limit > 0 && overLimit(err) {
				codec.refused = c.tooLong(limit, ids)
			}
			return codec.verdict(c, err)
		})
	})
	if err != nil {
		return nil, nil, fmt.Errorf("origin batch get: %w", err)
	}
	found, missing, err = c.checkBatch(ids, resp)
	if err != nil {
		c.calls.demote(err)
		return nil, nil, fmt.Errorf("origin batch get: %w", err)
	}
	return found, missing, nil
}

// Expand asks the origin to walk the graph below roots server-side and hands
// each level to fn as it streams in: the whole subgraph in one round trip.
// known are objects the caller holds: the origin walks through them but
// does not send them, so what it sends below them is expected too.
// An origin that does not implement Expand yields an error matching
// errors.ErrUnsupported. Objects are never handed over twice, and only
// objects reachable from roots (through b.Fields) are handed over; objects
// that cannot be cached end the call with ErrMalformedReply, as does a
// stream past its budget (see expandCheck; with known objects and no
// max_objects the call ends early instead, without an error). A stream that
// fails UNAVAILABLE before its first message is retried; once fn has seen a
// level it is not.
func (c *Client) Expand(ctx context.Context, roots []string, known []*graph.Object, b graph.Budget, fn func(level int, objs []*graph.Object, missing []string) error) error {
	err := c.retrying(ctx, "Expand", func(ctx context.Context) error {
		return c.roundTrip(ctx, "Expand", len(roots), func(ctx context.Context) error { return c.expand(ctx, roots, known, b, fn) })
	})
	if status.Code(err) == codes.Unimplemented && !errors.Is(err, ErrCircuitOpen) {
		return fmt.Errorf("origin expand: %w: %w", errors.ErrUnsupported, err)
	}
	if err != nil {
		return fmt.Errorf("origin expand: %w", err)
	}
	return nil
}

// errStreamStarted marks a stream error after fn has seen data: not
// retryable, since the caller has already acted on part of the answer.
var errStreamStarted = errors.New("after the stream began")

func (c *Client) expand(ctx context.Context, roots []string, known []*graph.Object, b graph.Budget, fn func(int, []*graph.Object, []string) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the stream if fn stops early
	codec := c.newReplyCodec(2)
	if limit := int(c.maxObjects.Load()); limit > 0 && b.MaxObjects > limit && isSpeculation(ctx) {
		// Speculation asks for what the origin takes, not an error: its
		// budget grows with the objects it walks through (fetch's known).
		b.MaxObjects = limit
	}
	stream, err := c.rpc.Expand(ctx, &lookaheadv1.ExpandRequest{
		Roots: roots, KnownIds: graph.IDs(known), Depth: uint32(b.Depth), MaxObjects: uint32(b.MaxObjects), Fields: b.Fields,
	}, codec.callOptions(0)...)
	if err != nil {
		return err
	}
	chk := c.newExpandCheck(roots, known, b)
	started := false
	for {
		var resp expandReply
		err := stream.RecvMsg(&resp)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			if codec.refused != nil {
				return codec.verdict(c, err)
			}
			if started {
				return fmt.Errorf("%w: %w", errStreamStarted, err)
			}
			return err
		}
		objs, missing, err := chk.next(&resp)
		if err != nil {
			return err
		}
		started = true
		if err := fn(int(resp.level), objs, missing); err != nil {
			if errors.Is(err, graph.ErrStop) {
				return nil // the caller has all it asked for: a success
			}
			return err
		}
		if chk.stop {
			return nil // what is left cannot be told from noise (see expandCheck): what came stands
		}
	}
}

// Put writes o at the origin; expected, when non-nil, makes it conditional.
// A write is never retried: an UNAVAILABLE answer may come after the origin
// applied it, and a second attempt would then fail its version check or
// write twice.
func (c *Client) Put(ctx context.Context, o *graph.Object, expected *uint64) (version uint64, err error) {
	if n := o.Size(); n > c.cfg.MaxObjectBytes {
		return 0, fmt.Errorf("object %q: %d bytes exceed the limit of %d: %w", o.ID, n, c.cfg.MaxObjectBytes, ErrObjectTooLarge)
	}
	var resp *lookaheadv1.OriginServicePutResponse
	err = c.roundTrip(ctx, "Put", 1, func(ctx context.Context) error {
		var err error
		resp, err = c.rpc.Put(ctx, &lookaheadv1.OriginServicePutRequest{Object: graphpb.ToProto(o), ExpectedVersion: expected})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("origin put: %w", err)
	}
	return resp.GetVersion(), nil
}

// Delete removes id at the origin; expected, when non-nil, makes it
// conditional. Like Put, it is never retried.
func (c *Client) Delete(ctx context.Context, id string, expected *uint64) error {
	err := c.roundTrip(ctx, "Delete", 1, func(ctx context.Context) error {
		_, err := c.rpc.Delete(ctx, &lookaheadv1.OriginServiceDeleteRequest{Id: id, ExpectedVersion: expected})
		return err
	})
	if err != nil {
		return fmt.Errorf("origin delete: %w", err)
	}
	return nil
}

// BreakerState is the circuit breaker's state; closed when it is disabled.
func (c *Client) BreakerState() resilience.State {
	if c.breaker == nil {
		return resilience.StateClosed
	}
	return c.breaker.State()
}
