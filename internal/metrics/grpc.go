package metrics

import (
	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// NewGRPCServer returns the standard gRPC server metrics of go-grpc-middleware
// (grpc_server_started_total, grpc_server_handled_total,
// grpc_server_msg_received_total, grpc_server_msg_sent_total and the
// grpc_server_handling_seconds histogram, labelled grpc_type, grpc_service,
// grpc_method and grpc_code), registered on reg. Install its interceptors on
// the server, then call InitializeMetrics once the services are registered.
func NewGRPCServer(reg prometheus.Registerer) *grpcprom.ServerMetrics {
	m := grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(
		grpcprom.WithHistogramBuckets(prometheus.ExponentialBuckets(25e-6, 2, 16))))
	reg.MustRegister(m)
	return m
}
