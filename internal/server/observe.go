package server

import (
	"context"
	"log/slog"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/lookahead-dev/lookahead/internal/metrics"
)

// Interceptors count and time every request in the standard gRPC server
// metrics (grpc_server_handled_total, grpc_server_handling_seconds; see
// metrics.NewGRPCServer).
func Interceptors(g *grpcprom.ServerMetrics) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(g.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(g.StreamServerInterceptor()),
	}
}

// LivenessService is the health service name that is SERVING for as long as
// the sidecar runs, whatever the origin does: for liveness probes.
const LivenessService = "liveness"

// WatchOrigin keeps the sidecar's health in step with its origin: SERVING
// while the origin answers its health check, NOT_SERVING otherwise. It checks
// every interval until ctx ends, logging and counting only transitions
// (lookahead_serving, lookahead_serving_changes_total).
func WatchOrigin(ctx context.Context, hs *health.Server, check func(context.Context) error, interval time.Duration, m *metrics.Set, log *slog.Logger) {
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
			m.ServingChanges.Inc()
			if up {
				m.Serving.Set(1)
				hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
				log.Info("origin reachable: serving")
			} else {
				m.Serving.Set(0)
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
