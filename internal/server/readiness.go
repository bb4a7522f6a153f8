package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/resilience"
)

// ReadinessConfig says when origin calls failing make the sidecar not
// ready. Zero values take the defaults.
type ReadinessConfig struct {
	// FailureRatio is the share of origin calls in one health interval that
	// must fail (strictly more than it) for the sidecar to stop being
	// ready; default 0.5. 1 = never for failed calls (the breaker and the
	// origin's health still count).
	FailureRatio float64
	// MinFailures is the fewest failed calls in one interval that can make
	// the sidecar not ready, so that one unlucky call among few does not;
	// as many failures in a row, however spread over time, also do;
	// default 3.
	MinFailures int
}

func (c *ReadinessConfig) setDefaults() {
	if c.FailureRatio == 0 {
		c.FailureRatio = 0.5
	}
	if c.MinFailures == 0 {
		c.MinFailures = 3
	}
}

func (c ReadinessConfig) validate() error {
	var errs []error
	if c.FailureRatio < 0 || c.FailureRatio > 1 {
		errs = append(errs, fmt.Errorf("readiness failure ratio %v: must be between 0 and 1", c.FailureRatio))
	}
	if c.MinFailures < 1 {
		errs = append(errs, fmt.Errorf("readiness min failures %d: must be at least 1", c.MinFailures))
	}
	return errors.Join(errs...)
}

// OriginCalls is what readiness reads of the origin client.
type OriginCalls interface {
	Calls() origin.CallStats
	BreakerState() resilience.State
	Probe(ctx context.Context) error
}

// Readiness decides whether the sidecar is ready: the origin says it is
// healthy, and the sidecar's own calls to it work. An origin can answer
// grpc.health SERVING while every read fails; then its health alone would
// keep a sidecar that can serve nothing but hits in rotation. It is not
// ready while the circuit breaker is open, when the last MinFailures calls
// all failed, or when more than FailureRatio of the origin calls of an
// interval (and at least MinFailures) failed; it is ready again once a
// call succeeds. When nobody calls, it makes the
// calls itself (origin.Client.Probe), so that it comes back without
// traffic, which a not-ready pod would not get.
type Readiness struct {
	cfg    ReadinessConfig
	health func(context.Context) error
	calls  OriginCalls

	// Owned by the one goroutine that calls Check.
	prev origin.CallStats
	err  error // why not ready, from calls; nil = ready
}

// NewReadiness judges readiness by health (the origin's health check) and
// the client's calls.
func NewReadiness(cfg ReadinessConfig, health func(context.Context) error, calls OriginCalls) (*Readiness, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Readiness{cfg: cfg, health: health, calls: calls}, nil
}

// Check returns nil when the sidecar is ready, else why not: a check for
// WatchOrigin, which calls it once per interval. Calls are judged over the
// time since the previous Check. Not safe for concurrent use.
func (r *Readiness) Check(ctx context.Context) error {
	herr := r.health(ctx)
	d := r.since()
	if herr == nil && r.err != nil && d.OK+d.Failed == 0 {
		_ = r.calls.Probe(ctx) // judged below with the rest
		p := r.since()
		d = origin.CallStats{OK: d.OK + p.OK, Failed: d.Failed + p.Failed, Last: p.Last}
	}
	r.err = r.judge(d)
	if herr != nil {
		return herr
	}
	return r.err
}

// since returns the calls since the last time it was called.
func (r *Readiness) since() origin.CallStats {
	now := r.calls.Calls()
	d := now.Sub(r.prev)
	r.prev = now
	return d
}

func (r *Readiness) judge(d origin.CallStats) error {
	n := d.OK + d.Failed
	switch {
	case r.calls.BreakerState() == resilience.StateOpen:
		return fmt.Errorf("origin circuit open: last failure: %v", d.Last)
	case d.Streak >= uint64(r.cfg.MinFailures):
		return fmt.Errorf("the last %d origin calls failed; last: %v", d.Streak, d.Last)
	case d.Failed >= uint64(r.cfg.MinFailures) && float64(d.Failed) > r.cfg.FailureRatio*float64(n):
		return fmt.Errorf("%d of %d origin calls failed since the last check; last: %v", d.Failed, n, d.Last)
	case r.err != nil && d.OK == 0:
		return r.err // no call has succeeded since: still not ready
	}
	return nil
}
