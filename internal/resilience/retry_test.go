package resilience_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lookahead-dev/lookahead/internal/resilience"
	"github.com/lookahead-dev/lookahead/internal/resilience/resiliencetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	errTransient = errors.New("transient")
	errFatal     = errors.New("fatal")
)

func TestRetryDo(t *testing.T) {
	const base = time.Minute
	tests := []struct {
		name       string
		retries    int
		results    []error       // what successive attempts return; the last repeats
		deadline   time.Duration // from the clock's start; 0 = none
		wantCalls  int
		wantWaits  []time.Duration // with Rand = 0: half of each exponential step
		wantErr    error
		wantNoTime bool
	}{
		{name: "success needs no retry", retries: 2, results: []error{nil}, wantCalls: 1},
		{name: "retries a transient error, then succeeds", retries: 2, results: []error{errTransient, nil},
			wantCalls: 2, wantWaits: []time.Duration{base / 2}},
		{name: "stops after the retries, returning the last error", retries: 2, results: []error{errTransient},
			wantCalls: 3, wantWaits: []time.Duration{base / 2, base}, wantErr: errTransient},
		{name: "never retries an error that is not retryable", retries: 2, results: []error{errFatal},
			wantCalls: 1, wantErr: errFatal},
		{name: "zero retries: one attempt", retries: 0, results: []error{errTransient},
			wantCalls: 1, wantErr: errTransient},
		{name: "negative retries: one attempt", retries: -1, results: []error{errTransient},
			wantCalls: 1, wantErr: errTransient},
		{name: "retries while the backoff fits the deadline", retries: 5, results: []error{errTransient},
			deadline: 2 * base, wantCalls: 3, wantWaits: []time.Duration{base / 2, base},
			wantErr: errTransient, wantNoTime: true}, // 30s + 60s fit in 2m, 2m more would not
		{name: "no retry whose backoff would end at the deadline", retries: 2, results: []error{errTransient},
			deadline: base / 2, wantCalls: 1, wantErr: errTransient, wantNoTime: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			clock := resiliencetest.NewClock(start)
			clock.AutoAdvance = true
			ctx := context.Background()
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				// The fake clock starts at the real now, so the deadline is
				// meaningful to both; it lies far enough ahead never to pass
				// in real time during the test.
				ctx, cancel = context.WithDeadline(ctx, start.Add(tt.deadline))
				defer cancel()
			}
			r := resilience.Retry{Retries: tt.retries, Base: base, Max: time.Hour, Clock: clock, Rand: func() float64 { return 0 }}
			calls, retried := 0, 0
			err := r.Do(ctx, func(context.Context) error {
				res := tt.results[min(calls, len(tt.results)-1)]
				calls++
				return res
			}, func(err error) bool { return errors.Is(err, errTransient) }, func() { retried++ })
			if tt.wantErr == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tt.wantErr)
			}
			assert.Equal(t, tt.wantNoTime, errors.Is(err, resilience.ErrNoTime), "ErrNoTime")
			assert.Equal(t, tt.wantCalls, calls, "attempts")
			assert.Equal(t, tt.wantCalls-1, retried, "onRetry calls")
			assert.Equal(t, tt.wantWaits, clock.Waits())
		})
	}
}

func TestRetryStopsWhenTheCallerCancels(t *testing.T) {
	clock := resiliencetest.NewClock(time.Now()) // never advanced: the backoff would wait forever
	ctx, cancel := context.WithCancel(context.Background())
	r := resilience.Retry{Retries: 3, Clock: clock}
	calls := 0
	err := r.Do(ctx, func(context.Context) error {
		calls++
		cancel() // the caller gives up during the first attempt
		return errTransient
	}, func(error) bool { return true }, nil)
	assert.ErrorIs(t, err, errTransient)
	assert.Equal(t, 1, calls)
}

func TestRetryBackoff(t *testing.T) {
	r := resilience.Retry{Base: 10 * time.Millisecond, Max: 100 * time.Millisecond}
	tests := []struct {
		name   string
		n      int
		rnd    float64
		lo, hi time.Duration
	}{
		{"first retry, no jitter", 0, 0, 5 * time.Millisecond, 5 * time.Millisecond},
		{"first retry, most jitter", 0, 0.999999, 9 * time.Millisecond, 10 * time.Millisecond},
		{"third retry doubles twice", 2, 0, 20 * time.Millisecond, 20 * time.Millisecond},
		{"capped at Max", 5, 0, 50 * time.Millisecond, 50 * time.Millisecond},
		{"capped at Max with jitter", 5, 0.999999, 99 * time.Millisecond, 100 * time.Millisecond},
		{"huge n does not overflow", 200, 0.5, 75 * time.Millisecond, 75 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.Rand = func() float64 { return tt.rnd }
			d := r.Backoff(tt.n)
			assert.GreaterOrEqual(t, d, tt.lo)
			assert.LessOrEqual(t, d, tt.hi)
		})
	}
	t.Run("defaults", func(t *testing.T) {
		z := resilience.Retry{Rand: func() float64 { return 0 }}
		assert.Equal(t, 12500*time.Microsecond, z.Backoff(0), "half of the 25ms default base")
		assert.Equal(t, 500*time.Millisecond, z.Backoff(30), "half of the 1s default cap")
	})
	t.Run("jitter spreads concurrent retries", func(t *testing.T) {
		seen := map[time.Duration]bool{}
		for i := 0; i < 50; i++ {
			seen[resilience.Retry{Base: time.Second, Max: time.Second}.Backoff(0)] = true
		}
		assert.Greater(t, len(seen), 1)
	})
}
