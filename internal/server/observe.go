package server

import (
	"context"
	"log/slog"
	"path"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/lookahead-dev/lookahead/internal/metrics"
)

// Interceptors count every request in lookahead_requests_total by method and
// code and time it in lookahead_request_duration_seconds.
func Interceptors(m *metrics.Set) []grpc.ServerOption {
	record := func(full string, start time.Time, err error) {
		method := path.Base(full)
		m.Requests.WithLabelValues(method, status.Code(err).String()).Inc()
		m.RequestDuration.WithLabelValues(method).Observe(time.Since(start).Seconds())
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			start := time.Now()
			resp, err := h(ctx, req)
			record(info.FullMethod, start, err)
			return resp, err
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			start := time.Now()
			err := h(srv, ss)
			record(info.FullMethod, start, err)
			return err
		}),
	}
}

// LivenessService is the health service name that is SERVING for as long as
// the sidecar runs, whatever the origin does: for liveness probes.
const LivenessService = "liveness"

// WatchOrigin keeps the sidecar's health in step with its origin: SERVING
// while the origin answers its health check, NOT_SERVING otherwise. It checks
// every interval until ctx ends, logging only transitions.
func WatchOrigin(ctx context.Context, hs *health.Server, check func(context.Context) error, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	serving := false
	for {
		cctx, cancel := context.WithTimeout(ctx, interval)
		err := check(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if up := err == nil; up != serving {
			serving = up
			if up {
				hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
				log.Info("origin reachable: serving")
			} else {
				hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
				log.Warn("origin unreachable: not serving", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
