package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lookahead-dev/lookahead/internal/resilience"
	"github.com/lookahead-dev/lookahead/internal/resilience/resiliencetest"
)

func ExampleBreaker() {
	clock := resiliencetest.NewClock(time.Unix(0, 0))
	b, _ := resilience.NewBreaker(resilience.BreakerConfig{Failures: 2, Cooldown: time.Second, Clock: clock})
	call := func(err error) {
		t, rejected := b.Allow()
		if rejected != nil {
			fmt.Println("refused:", rejected)
			return
		}
		o := resilience.Success
		if err != nil {
			o = resilience.Failure
		}
		b.Record(t, o, err)
		fmt.Println("called; breaker", b.State())
	}
	down := errors.New("connection refused")
	call(down)
	call(down)
	call(nil)
	clock.Advance(time.Second)
	call(nil) // the half-open probe
	// Output:
	// called; breaker closed
	// called; breaker open
	// refused: resilience: circuit open: connection refused
	// called; breaker closed
}

func ExampleRetry_Do() {
	clock := resiliencetest.NewClock(time.Now())
	clock.AutoAdvance = true // back off without sleeping
	r := resilience.Retry{Retries: 2, Base: 100 * time.Millisecond, Clock: clock, Rand: func() float64 { return 0 }}
	attempts := 0
	err := r.Do(context.Background(), func(context.Context) error {
		attempts++
		if attempts < 3 {
			return errors.New("unavailable")
		}
		return nil
	}, func(error) bool { return true }, nil)
	fmt.Println(attempts, err, clock.Waits())
	// Output: 3 <nil> [50ms 100ms]
}
