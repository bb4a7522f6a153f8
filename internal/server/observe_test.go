package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/lookahead-dev/lookahead/internal/metrics"
)

// TestWatchOriginCountsTransitions: lookahead_serving follows the health
// status and lookahead_serving_changes_total counts each transition, not
// each check, so that a flapping origin shows.
func TestWatchOriginCountsTransitions(t *testing.T) {
	down := errors.New("origin down")
	// up, up, down, down, up, down: four transitions.
	answers := []error{nil, nil, down, down, nil, down}
	m := metrics.New(prometheus.NewRegistry())
	hs := health.NewServer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	check := func(context.Context) error {
		if calls == len(answers) {
			cancel()
			return down
		}
		calls++
		return answers[calls-1]
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		WatchOrigin(ctx, hs, check, time.Millisecond, m, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	<-done
	assert.Equal(t, len(answers), calls)
	assert.Equal(t, 4.0, testutil.ToFloat64(m.ServingChanges))
	assert.Equal(t, 0.0, testutil.ToFloat64(m.Serving), "the last answer was down")
	resp, err := hs.Check(context.Background(), &healthpb.HealthCheckRequest{})
	assert.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, resp.GetStatus())
}
