package server

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/launch"
	"github.com/lookahead-dev/lookahead/internal/metrics"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

func TestReadinessFollowsOriginCalls(t *testing.T) {
	down := status.Error(codes.Unavailable, "shard down")
	tests := []struct {
		name    string
		cfg     origin.Config
		bad     origintest.Misbehaviour
		gets    int
		wantErr string
		probes  int  // round trips the next two Checks make (a probe is refused while the breaker is open)
		healed  bool // the first probe succeeds: it asks for no id, so an origin failing only some ids passes it
	}{
		{name: "BatchGet UNAVAILABLE while health says SERVING", cfg: origin.Config{BreakerFailures: -1},
			bad: origintest.Misbehaviour{BatchGetErr: down}, gets: 1, wantErr: "the last 3 origin calls failed", probes: 2},
		{name: "BatchGet INTERNAL", cfg: origin.Config{BreakerFailures: -1},
			bad: origintest.Misbehaviour{BatchGetErr: status.Error(codes.Internal, "bug")}, gets: 3, wantErr: "the last 3 origin calls failed", probes: 2},
		{name: "ids left out of replies", cfg: origin.Config{BreakerFailures: -1},
			bad: origintest.Misbehaviour{Omit: []string{"a"}}, gets: 3, wantErr: "origin reply incomplete", probes: 1, healed: true},
		{name: "breaker open", cfg: origin.Config{BreakerFailures: 1, BreakerCooldown: time.Hour},
			bad: origintest.Misbehaviour{BatchGetErr: down}, gets: 1, wantErr: "origin circuit open: last failure: ", probes: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := origintest.New(&graph.Object{ID: "a", Version: 1})
			r := newHostileRig(t, o, tt.cfg)
			rd, err := NewReadiness(ReadinessConfig{}, r.oc.Check, r.oc)
			require.NoError(t, err)
			ctx := context.Background()
			require.NoError(t, rd.Check(ctx), "ready before anything failed")
			require.Zero(t, o.Calls("BatchGet"), "no probe while ready")

			o.Misbehave(tt.bad)
			for range tt.gets {
				_, err := r.get("a")
				require.Error(t, err)
			}
			err = rd.Check(ctx)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)

			before := o.Calls("BatchGet")
			if tt.healed {
				assert.NoError(t, rd.Check(ctx), "the probe succeeded")
				assert.Equal(t, tt.probes, o.Calls("BatchGet")-before)
				return
			}
			require.Error(t, rd.Check(ctx), "no call since: a probe, which fails too")
			o.Misbehave(origintest.Misbehaviour{})
			if tt.probes == 0 {
				assert.Error(t, rd.Check(ctx), "the breaker refuses the probe until its cool-down")
			} else {
				assert.NoError(t, rd.Check(ctx), "back once a call succeeds")
			}
			assert.Equal(t, tt.probes, o.Calls("BatchGet")-before)
		})
	}
}

func TestReadinessToleratesAFewFailures(t *testing.T) {
	o := origintest.New(&graph.Object{ID: "a", Version: 1}, &graph.Object{ID: "b", Version: 1})
	r := newHostileRig(t, o, origin.Config{BreakerFailures: -1})
	rd, err := NewReadiness(ReadinessConfig{}, r.oc.Check, r.oc)
	require.NoError(t, err)
	o.Misbehave(origintest.Misbehaviour{BatchGetErr: status.Error(codes.Internal, "bug")})
	_, err = r.get("a")
	require.Error(t, err)
	o.Misbehave(origintest.Misbehaviour{})
	for _, id := range []string{"a", "b"} {
		_, err = r.get(id)
		require.NoError(t, err)
	}
	assert.NoError(t, rd.Check(context.Background()), "1 of 3 failed: below both the count and the share")
}

func TestWatchOriginReadinessAndLiveness(t *testing.T) {
	o := origintest.New(&graph.Object{ID: "a", Version: 1})
	r := newHostileRig(t, o, origin.Config{BreakerFailures: -1})
	rd, err := NewReadiness(ReadinessConfig{}, r.oc.Check, r.oc)
	require.NoError(t, err)
	hs := health.NewServer()
	hs.SetServingStatus(LivenessService, healthpb.HealthCheckResponse_SERVING)
	var logs launch.Buffer
	m := metrics.New(prometheus.NewRegistry())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		WatchOrigin(ctx, hs, rd.Check, 50*time.Millisecond, m, slog.New(slog.NewTextHandler(&logs, nil)))
	}()
	defer func() { cancel(); <-done }()
	status := func(service string) healthpb.HealthCheckResponse_ServingStatus {
		resp, err := hs.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		require.NoError(t, err)
		return resp.GetStatus()
	}
	require.Eventually(t, func() bool { return status("") == healthpb.HealthCheckResponse_SERVING }, 5*time.Second, time.Millisecond)

	o.Misbehave(origintest.Misbehaviour{BatchGetErr: statusDown})
	_, err = r.get("a")
	require.Error(t, err)
	require.Eventually(t, func() bool { return status("") == healthpb.HealthCheckResponse_NOT_SERVING }, 5*time.Second, time.Millisecond)
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, status(LivenessService), "liveness stays")
	// Many more checks pass while it stays down (each probes and fails).
	require.Eventually(t, func() bool { return o.Calls("BatchGet") >= 6 }, 5*time.Second, time.Millisecond)

	o.Misbehave(origintest.Misbehaviour{})
	require.Eventually(t, func() bool { return status("") == healthpb.HealthCheckResponse_SERVING }, 5*time.Second, time.Millisecond)
	// Once per transition, not once per check: on a loaded machine a health
	// check can also time out (its deadline is the interval), which is a
	// transition of its own, so the lines are counted against the
	// transitions rather than expected once.
	transitions := strings.Count(logs.String(), "not serving") + strings.Count(logs.String(), "reachable: serving")
	assert.Equal(t, int(testutil.ToFloat64(m.ServingChanges)), transitions, "the reason is logged once per transition")
	assert.Less(t, transitions, int(o.Calls("BatchGet")), "fewer lines than the failed checks while down")
	assert.Contains(t, logs.String(), "origin calls failed")
}

var statusDown = status.Error(codes.Unavailable, "shard down")

func TestReadinessFailureShare(t *testing.T) {
	o := origintest.New(&graph.Object{ID: "a", Version: 1})
	r := newHostileRig(t, o, origin.Config{BreakerFailures: -1, Retries: -1})
	rd, err := NewReadiness(ReadinessConfig{}, r.oc.Check, r.oc)
	require.NoError(t, err)
	ctx := context.Background()
	for _, fail := range []bool{true, false, true, true, false, true} { // never 3 in a row; 4 of 6
		if fail {
			o.Misbehave(origintest.Misbehaviour{BatchGetErr: statusDown})
		} else {
			o.Misbehave(origintest.Misbehaviour{})
		}
		_, _, _ = r.oc.BatchGet(ctx, []string{"a"})
	}
	err = rd.Check(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "4 of 6 origin calls failed since the last check")
}
