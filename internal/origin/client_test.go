package origin_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/metrics"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/resilience"
	"github.com/lookahead-dev/lookahead/internal/resilience/resiliencetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errDown = status.Error(codes.Unavailable, "origin down")

// script answers BatchGet with the errors in order (nil = a well-formed
// reply), repeating the last.
func script(errs ...error) func(int, *lookaheadv1.OriginServiceBatchGetRequest) (*lookaheadv1.OriginServiceBatchGetResponse, error) {
	return func(n int, req *lookaheadv1.OriginServiceBatchGetRequest) (*lookaheadv1.OriginServiceBatchGetResponse, error) {
		if err := errs[min(n, len(errs))-1]; err != nil {
			return nil, err
		}
		return &lookaheadv1.OriginServiceBatchGetResponse{MissingIds: req.GetIds()}, nil
	}
}

func autoClock() *resiliencetest.Clock {
	c := resiliencetest.NewClock(time.Now())
	c.AutoAdvance = true
	return c
}

func TestBatchGetRetries(t *testing.T) {
	tests := []struct {
		name        string
		cfg         origin.Config
		answers     []error
		wantCode    codes.Code
		wantCalls   int
		wantRetries float64
	}{
		{name: "UNAVAILABLE twice, then an answer", answers: []error{errDown, errDown, nil},
			wantCode: codes.OK, wantCalls: 3, wantRetries: 2},
		{name: "gives up after two retries (the default)", answers: []error{errDown},
			wantCode: codes.Unavailable, wantCalls: 3, wantRetries: 2},
		{name: "configured retries", cfg: origin.Config{Retries: 4}, answers: []error{errDown},
			wantCode: codes.Unavailable, wantCalls: 5, wantRetries: 4},
		{name: "retries disabled", cfg: origin.Config{Retries: -1}, answers: []error{errDown},
			wantCode: codes.Unavailable, wantCalls: 1},
		{name: "INTERNAL is not retried", answers: []error{status.Error(codes.Internal, "bug")},
			wantCode: codes.Internal, wantCalls: 1},
		{name: "DEADLINE_EXCEEDED is not retried", answers: []error{status.Error(codes.DeadlineExceeded, "slow")},
			wantCode: codes.DeadlineExceeded, wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := autoClock()
			tt.cfg.Clock = clock
			tt.cfg.BreakerFailures = -1
			r := newRig(t, &fakeOrigin{batchGet: script(tt.answers...)}, tt.cfg)
			_, _, err := r.client.BatchGet(context.Background(), []string{"a"})
			assert.Equal(t, tt.wantCode, status.Code(err), "%v", err)
			assert.Equal(t, tt.wantCalls, r.fake.Calls("BatchGet"))
			assert.Equal(t, tt.wantRetries, testutil.ToFloat64(r.m.OriginRetries.WithLabelValues("BatchGet")))
			assert.Equal(t, float64(tt.wantCalls), roundTrips(r.m, "BatchGet"), "every attempt is a round trip")
			assert.Len(t, clock.Waits(), tt.wantCalls-1, "one backoff per retry")
			for i, w := range clock.Waits() {
				step := origin.DefaultRetryBase << i
				assert.GreaterOrEqual(t, w, step/2, "backoff %d", i)
				assert.LessOrEqual(t, w, step, "backoff %d", i)
			}
		})
	}
}

// roundTrips sums lookahead_origin_round_trips_total of rpc over all codes.
func roundTrips(m *metrics.Set, rpc string) float64 {
	var n float64
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		n += testutil.ToFloat64(m.OriginRoundTrips.WithLabelValues(rpc, c.String()))
	}
	return n
}

func TestRetryNeverOutlivesTheDeadline(t *testing.T) {
	clock := resiliencetest.NewClock(time.Now()) // never advanced: a backoff would block
	r := newRig(t, &fakeOrigin{batchGet: script(errDown)},
		origin.Config{Clock: clock, RetryBase: time.Hour, RetryMax: 2 * time.Hour, BreakerFailures: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // sooner than the first backoff
	defer cancel()
	_, _, err := r.client.BatchGet(ctx, []string{"a"})
	assert.Equal(t, codes.Unavailable, status.Code(err), "the origin's own answer, at once")
	assert.ErrorIs(t, err, resilience.ErrNoTime)
	assert.Equal(t, 1, r.fake.Calls("BatchGet"))
	assert.Empty(t, clock.Waits())
}

func TestWritesAreNeverRetried(t *testing.T) {
	r := newRig(t, &fakeOrigin{put: func(int, *lookaheadv1.OriginServicePutRequest) (*lookaheadv1.OriginServicePutResponse, error) {
		return nil, errDown
	}}, origin.Config{Clock: autoClock()})
	_, err := r.client.Put(context.Background(), &graph.Object{ID: "a"}, nil)
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, 1, r.fake.Calls("Put"))
}

func TestPutRefusesWhatCouldNotBeReadBack(t *testing.T) {
	r := newRig(t, &fakeOrigin{put: func(int, *lookaheadv1.OriginServicePutRequest) (*lookaheadv1.OriginServicePutResponse, error) {
		return &lookaheadv1.OriginServicePutResponse{Version: 1}, nil
	}}, origin.Config{MaxObjectBytes: maxObject})
	o := &graph.Object{ID: "a"}
	o.Payload = make([]byte, maxObject-o.Size()) // exactly the limit
	_, err := r.client.Put(context.Background(), o, nil)
	require.NoError(t, err, "exactly the limit")
	o.Payload = append(o.Payload, 0)
	_, err = r.client.Put(context.Background(), o, nil)
	assert.ErrorIs(t, err, origin.ErrObjectTooLarge)
	assert.ErrorContains(t, err, `object "a": 2001 bytes exceed the limit of 2000`)
	assert.Equal(t, 1, r.fake.Calls("Put"), "the oversized one was not written")
}

func TestTimeoutCutsAHungOriginAndCountsAgainstIt(t *testing.T) {
	hung := make(chan struct{})
	r := newRig(t, &fakeOrigin{batchGet: func(int, *lookaheadv1.OriginServiceBatchGetRequest) (*lookaheadv1.OriginServiceBatchGetResponse, error) {
		<-hung
		return &lookaheadv1.OriginServiceBatchGetResponse{}, nil
	}}, origin.Config{Timeout: 20 * time.Millisecond, Retries: -1, BreakerFailures: 1})
	t.Cleanup(func() { close(hung) }) // before the rig stops its server

	_, _, err := r.client.BatchGet(context.Background(), []string{"a"}) // no deadline of its own
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "%v", err)
	_, _, err = r.client.BatchGet(context.Background(), []string{"a"})
	assert.ErrorIs(t, err, origin.ErrCircuitOpen, "an origin that does not answer counts as down")
	// One round trip (the fake may not have seen it before it was cut, on
	// a loaded machine); the second call made none.
	assert.Equal(t, 1.0, roundTrips(r.m, "BatchGet"))
	assert.LessOrEqual(t, r.fake.Calls("BatchGet"), 1)
}

func TestInFlightFollowsRoundTrips(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	r := newRig(t, &fakeOrigin{batchGet: func(int, *lookaheadv1.OriginServiceBatchGetRequest) (*lookaheadv1.OriginServiceBatchGetResponse, error) {
		close(started)
		<-release
		return &lookaheadv1.OriginServiceBatchGetResponse{MissingIds: []string{"a"}}, nil
	}}, origin.Config{})
	inFlight := r.m.OriginInFlight.WithLabelValues("BatchGet")
	done := make(chan error)
	go func() {
		_, _, err := r.client.BatchGet(context.Background(), []string{"a"})
		done <- err
	}()
	<-started
	assert.Equal(t, 1.0, testutil.ToFloat64(inFlight), "while the origin holds the call")
	close(release)
	require.NoError(t, <-done)
	assert.Zero(t, testutil.ToFloat64(inFlight), "once it answered")
}

func TestBreaker(t *testing.T) {
	clock := resiliencetest.NewClock(time.Now())
	down := true
	r := newRig(t, &fakeOrigin{batchGet: func(n int, req *lookaheadv1.OriginServiceBatchGetRequest) (*lookaheadv1.OriginServiceBatchGetResponse, error) {
		if down {
			return nil, errDown
		}
		return &lookaheadv1.OriginServiceBatchGetResponse{MissingIds: req.GetIds()}, nil
	}}, origin.Config{Clock: clock, Retries: -1, BreakerFailures: 3, BreakerCooldown: 5 * time.Second})
	ctx := context.Background()
	get := func() error { _, _, err := r.client.BatchGet(ctx, []string{"a"}); return err }
	state := func() float64 { return testutil.ToFloat64(r.m.OriginBreakerState) }
	rejections := func() float64 { return testutil.ToFloat64(r.m.OriginBreakerRejections.WithLabelValues("BatchGet")) }

	for i := 0; i < 3; i++ {
		require.Equal(t, codes.Unavailable, status.Code(get()))
	}
	require.Equal(t, 3, r.fake.Calls("BatchGet"))
	assert.Equal(t, float64(resilience.StateOpen), state())

	err := get()
	assert.ErrorIs(t, err, origin.ErrCircuitOpen)
	assert.ErrorContains(t, err, "origin batch get: origin circuit open: last failure: rpc error: code = Unavailable desc = origin down")
	assert.Equal(t, codes.Unavailable, status.Code(err), "the origin's own UNAVAILABLE, for the server to map")
	assert.Equal(t, 3, r.fake.Calls("BatchGet"), "open: no round trip")
	assert.Equal(t, 1.0, rejections())

	down = false
	clock.Advance(5*time.Second - time.Millisecond)
	assert.ErrorIs(t, get(), origin.ErrCircuitOpen, "still cooling down")
	assert.Equal(t, 3, r.fake.Calls("BatchGet"))

	clock.Advance(time.Millisecond)
	require.NoError(t, get(), "half-open: the probe goes through")
	assert.Equal(t, 4, r.fake.Calls("BatchGet"))
	assert.Equal(t, float64(resilience.StateClosed), state())
	require.NoError(t, get())
	assert.Equal(t, 2.0, rejections())
}

func TestBreakerWithRetries(t *testing.T) {
	clock := autoClock()
	r := newRig(t, &fakeOrigin{batchGet: script(errDown)}, origin.Config{Clock: clock, Retries: 2, BreakerFailures: 5})
	ctx := context.Background()
	_, _, err := r.client.BatchGet(ctx, []string{"a"})
	require.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, 3, r.fake.Calls("BatchGet"), "first call: three attempts")
	_, _, err = r.client.BatchGet(ctx, []string{"a"})
	assert.ErrorIs(t, err, origin.ErrCircuitOpen, "the fifth failed attempt opened the circuit; a refusal is not retried")
	assert.Equal(t, 5, r.fake.Calls("BatchGet"))
	assert.Equal(t, 4.0, testutil.ToFloat64(r.m.OriginRetries.WithLabelValues("BatchGet")), "the last retry was refused by the breaker")
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.OriginBreakerRejections.WithLabelValues("BatchGet")))
	assert.Equal(t, 5.0, roundTrips(r.m, "BatchGet"))
}

func TestBreakerIgnoresTheCallersDeadlines(t *testing.T) {
	r := newRig(t, &fakeOrigin{batchGet: script(status.Error(codes.DeadlineExceeded, "caller gave up"))},
		origin.Config{Clock: autoClock(), BreakerFailures: 2})
	for i := 0; i < 10; i++ {
		_, _, err := r.client.BatchGet(context.Background(), []string{"a"})
		require.Equal(t, codes.DeadlineExceeded, status.Code(err))
	}
	assert.Equal(t, resilience.StateClosed, r.client.BreakerState())
	assert.Equal(t, 10, r.fake.Calls("BatchGet"))
}

func TestBreakerOpensOnARealOutage(t *testing.T) {
	r := newRig(t, &fakeOrigin{batchGet: script(nil)}, origin.Config{Clock: autoClock(), BreakerFailures: 3, BreakerCooldown: time.Hour})
	ctx := context.Background()
	_, _, err := r.client.BatchGet(ctx, []string{"a"})
	require.NoError(t, err)
	r.gs.Stop() // the origin process goes away
	for i := 0; i < 3; i++ {
		_, _, err = r.client.BatchGet(ctx, []string{"a"})
		if errors.Is(err, origin.ErrCircuitOpen) {
			break
		}
		require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	}
	_, _, err = r.client.BatchGet(ctx, []string{"a"})
	assert.ErrorIs(t, err, origin.ErrCircuitOpen)
	assert.Equal(t, codes.Unavailable, status.Code(err))
}

func TestExpandRetriesOnlyBeforeTheFirstMessage(t *testing.T) {
	r := newRig(t, &fakeOrigin{expand: func(n int, req *lookaheadv1.ExpandRequest, send func(*lookaheadv1.ExpandResponse) error) error {
		if n == 1 {
			return errDown
		}
		if err := send(&lookaheadv1.ExpandResponse{Level: 0, Objects: []*lookaheadv1.Object{obj("r", "R")}}); err != nil {
			return err
		}
		return errDown
	}}, origin.Config{Clock: autoClock(), BreakerFailures: -1})
	levels := 0
	err := r.client.Expand(context.Background(), []string{"r"}, nil, graph.Budget{Depth: 1}, func(int, []*graph.Object, []string) error {
		levels++
		return nil
	})
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, 2, r.fake.Calls("Expand"), "retried once: the second stream had begun when it failed")
	assert.Equal(t, 1, levels)
}

func TestExpandUnimplemented(t *testing.T) {
	r := newRig(t, &fakeOrigin{}, origin.Config{Clock: autoClock()})
	err := r.client.Expand(context.Background(), []string{"r"}, nil, graph.Budget{Depth: 1}, func(int, []*graph.Object, []string) error { return nil })
	assert.ErrorIs(t, err, errors.ErrUnsupported)
	assert.Equal(t, 1, r.fake.Calls("Expand"))
	assert.Equal(t, resilience.StateClosed, r.client.BreakerState(), "UNIMPLEMENTED proves the origin up")
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name    string
		cfg     origin.Config
		wantErr string
	}{
		{"zero is valid", origin.Config{}, ""},
		{"negative retries mean none", origin.Config{Retries: -1, BreakerFailures: -1}, ""},
		{"negative base", origin.Config{RetryBase: -time.Second}, "retry base -1s: must not be negative"},
		{"max below base", origin.Config{RetryBase: time.Second, RetryMax: time.Millisecond}, "retry max 1ms: must be at least the retry base 1s"},
		{"negative cooldown", origin.Config{BreakerCooldown: -time.Second}, "breaker cooldown -1s: must not be negative"},
		{"negative max object", origin.Config{MaxObjectBytes: -1}, "max object bytes -1: must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := origin.New(nil, tt.cfg, metrics.New(prometheus.NewRegistry()))
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.wantErr)
		})
	}
}
