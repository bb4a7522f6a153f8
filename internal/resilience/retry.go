package resilience

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Retry is a bounded retry policy: after a failed attempt it waits an
// exponentially growing, jittered backoff and tries again, at most Retries
// times, and never waits past the caller's deadline. The zero value retries
// nothing.
type Retry struct {
	// Retries is the number of attempts after the first; 0 or negative =
	// none.
	Retries int
	// Base is the backoff before the first retry; each further retry doubles
	// it, up to Max. Zero Base = 25ms, zero Max = 1s.
	Base, Max time.Duration
	// Clock waits the backoffs; nil = SystemClock.
	Clock Clock
	// Rand returns jitter in [0, 1); nil = math/rand/v2.Float64.
	Rand func() float64
}

// Backoff is the wait before retry n (0 for the first retry): "equal
// jitter", half of min(Max, Base·2ⁿ) plus a random part of the other half,
// so that retries of concurrent callers spread out but never come
// back-to-back.
func (r Retry) Backoff(n int) time.Duration {
	base, ceil := r.Base, r.Max
	if base <= 0 {
		base = 25 * time.Millisecond
	}
	if ceil <= 0 {
		ceil = time.Second
	}
	d := ceil
	if n < 62 && base<<n > 0 && base<<n < ceil { // base<<n overflows for large n
		d = base << n
	}
	rnd := r.Rand
	if rnd == nil {
		rnd = rand.Float64
	}
	half := d / 2
	return half + time.Duration(rnd()*float64(d-half))
}

// ErrNoTime reports that a retry was not made because its backoff would end
// after the caller's deadline; it wraps the last attempt's error.
var ErrNoTime = errors.New("resilience: no time left to retry")

// Do calls attempt until it succeeds or returns an error that retryable
// rejects, the retries are spent, or ctx ends. It returns the last attempt's
// error. When the next backoff would pass ctx's deadline it stops at once,
// returning the last error wrapped with ErrNoTime, rather than fail later
// with nothing to show. onRetry, when non-nil, is called before each retry.
func (r Retry) Do(ctx context.Context, attempt func(ctx context.Context) error, retryable func(error) bool, onRetry func()) error {
	clock := r.Clock
	if clock == nil {
		clock = SystemClock{}
	}
	for n := 0; ; n++ {
		err := attempt(ctx)
		if err == nil || n >= r.Retries || !retryable(err) {
			return err
		}
		wait := r.Backoff(n)
		if dl, ok := ctx.Deadline(); ok && !clock.Now().Add(wait).Before(dl) {
			return fmt.Errorf("%w: %w", ErrNoTime, err)
		}
		select {
		case <-clock.After(wait):
		case <-ctx.Done():
			return err
		}
		if onRetry != nil {
			onRetry()
		}
	}
}
