package origin

import (
	"errors"
	"fmt"
	"time"

	"github.com/lookahead-dev/lookahead/internal/metrics"
	"github.com/lookahead-dev/lookahead/internal/resilience"
)

// Defaults of Config's zero values.
const (
	DefaultRetries         = 2
	DefaultRetryBase       = 25 * time.Millisecond
	DefaultRetryMax        = 250 * time.Millisecond
	DefaultBreakerFailures = 5
	DefaultBreakerCooldown = time.Second
	DefaultMaxObjectBytes  = 4 << 20
	DefaultTimeout         = 30 * time.Second
)

// Config tunes the client's retries, circuit breaker and reply checks. Zero
// values take the documented defaults.
type Config struct {
	// Retries is how many times a read (BatchGet, or an Expand that failed
	// before its first message) is tried again after an UNAVAILABLE answer;
	// default 2, negative = never. Writes are never retried. A retry waits
	// a jittered, doubling backoff and is not made when that wait would end
	// after the caller's deadline.
	Retries int
	// RetryBase is the backoff before the first retry, about (half of it
	// plus jitter); default 25ms. RetryMax caps the backoff; default 250ms.
	RetryBase, RetryMax time.Duration
	// BreakerFailures is the number of consecutive round trips answered
	// UNAVAILABLE that opens the circuit; default 5, negative = no breaker.
	// Deadlines and cancellations are not failures: they are the caller's.
	BreakerFailures int
	// BreakerCooldown is how long an open circuit refuses calls, without a
	// round trip, before it lets one probe through; default 1s.
	BreakerCooldown time.Duration
	// MaxObjectBytes is the largest object (graph.Object.Size) accepted from
	// the origin; a larger one is malformed; default 4 MiB.
	MaxObjectBytes int64
	// MaxMessageBytes is the origin connection's receive limit
	// (DialConfig.MaxMessageBytes); default DefaultMaxMessageBytes. A
	// BatchGet reply is received only up to what its ids' objects can take
	// when that is less (see reply.go).
	MaxMessageBytes int
	// Timeout caps each round trip (each attempt of a read, each write, a
	// whole Expand stream) when the caller's deadline is later or absent, so
	// that an origin that stops answering cannot hold a request or a
	// prefetch worker for ever. A round trip cut by it counts as a failure
	// for the breaker. Default 30s, negative = none.
	Timeout time.Duration
	// Clock times backoffs and cool-downs; nil = the system clock.
	Clock resilience.Clock
	// Route names this origin in the origin label of the per-route
	// metrics; default metrics.DefaultRoute.
	Route string
	// Observe, when set, is told of every round trip as it ends: for the
	// prefetch scheduler's pacing (prefetch.Window), which backs off when
	// demand slows down or the origin sheds speculation.
	Observe func(RoundTrip)
}

func (c *Config) setDefaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Retries, DefaultRetries)
	def(&c.BreakerFailures, DefaultBreakerFailures)
	defDur(&c.RetryBase, DefaultRetryBase)
	defDur(&c.RetryMax, DefaultRetryMax)
	defDur(&c.BreakerCooldown, DefaultBreakerCooldown)
	defDur(&c.Timeout, DefaultTimeout)
	if c.MaxObjectBytes == 0 {
		c.MaxObjectBytes = DefaultMaxObjectBytes
	}
	def(&c.MaxMessageBytes, DefaultMaxMessageBytes)
	if c.Clock == nil {
		c.Clock = resilience.SystemClock{}
	}
	if c.Route == "" {
		c.Route = metrics.DefaultRoute
	}
}

// Validate reports every broken rule of c, its zero values read as the
// defaults, as New would: for commands that check settings before starting.
func (c Config) Validate() error {
	c.setDefaults()
	return c.validate()
}

// validate reports every broken rule, after setDefaults.
func (c Config) validate() error {
	var errs []error
	if c.RetryBase < 0 {
		errs = append(errs, fmt.Errorf("origin: retry base %v: must not be negative", c.RetryBase))
	}
	if c.RetryMax < c.RetryBase {
		errs = append(errs, fmt.Errorf("origin: retry max %v: must be at least the retry base %v", c.RetryMax, c.RetryBase))
	}
	if c.BreakerCooldown < 0 {
		errs = append(errs, fmt.Errorf("origin: breaker cooldown %v: must not be negative", c.BreakerCooldown))
	}
	if c.MaxMessageBytes < 0 {
		errs = append(errs, fmt.Errorf("origin: max message bytes %d: must not be negative", c.MaxMessageBytes))
	}
	if c.MaxObjectBytes < 0 {
		errs = append(errs, fmt.Errorf("origin: max object bytes %d: must not be negative", c.MaxObjectBytes))
	}
	return errors.Join(errs...)
}
