// Package tracing is lookahead's OpenTelemetry tracing, off unless an OTLP
// endpoint is configured: gRPC server and client spans (otelgrpc) that carry
// the W3C trace context from the application through the sidecar to the
// origin, exported over OTLP/gRPC.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
)

// Config says where spans go. The zero value turns tracing off.
type Config struct {
	// Endpoint is the OTLP/gRPC collector as a URL: http://host:4317 for
	// plaintext, https://host:4317 for TLS; empty = no tracing.
	Endpoint string
	// Service names this process in its spans (service.name).
	Service string
}

// Validate reports an endpoint that is no http or https URL with a host.
func (c Config) Validate() error {
	if c.Endpoint == "" {
		return nil
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("otlp endpoint %q: want http://host:port (plaintext) or https://host:port", c.Endpoint)
	}
	return nil
}

// Tracing holds a tracer provider. A nil *Tracing is tracing off: it adds
// no gRPC options and no spans, so the request path costs what it did.
type Tracing struct {
	tp *sdktrace.TracerProvider
}

// New starts exporting to cfg.Endpoint; nil, nil when it is empty. The
// exporter connects lazily: a collector that is down loses spans, never
// requests.
func New(ctx context.Context, cfg Config) (*Tracing, error) {
	if cfg.Endpoint == "" {
		return nil, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(cfg.Endpoint))
	if err != nil {
		return nil, fmt.Errorf("otlp exporter: %w", err)
	}
	return NewWith(cfg.Service, sdktrace.NewBatchSpanProcessor(exp)), nil
}

// NewWith sends spans to sp (tests pass a tracetest.SpanRecorder).
func NewWith(service string, sp sdktrace.SpanProcessor) *Tracing {
	res := resource.NewSchemaless(attribute.String("service.name", service))
	return &Tracing{tp: sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSpanProcessor(sp))}
}

func (t *Tracing) options() []otelgrpc.Option {
	return []otelgrpc.Option{
		otelgrpc.WithTracerProvider(t.tp),
		otelgrpc.WithPropagators(propagation.TraceContext{}),
		otelgrpc.WithMeterProvider(noop.NewMeterProvider()), // metrics are Prometheus'
		// Health checks (the sidecar probes its origin every second, probes
		// probe the sidecar) and reflection are not requests worth a trace.
		otelgrpc.WithFilter(filters.None(filters.ServiceName("grpc.health.v1.Health"), filters.ServicePrefix("grpc.reflection."))),
	}
}

// ServerOptions trace every request a server handles, continuing the
// caller's trace; none when t is nil.
func (t *Tracing) ServerOptions() []grpc.ServerOption {
	if t == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(t.options()...))}
}

// DialOptions trace every call on a client connection and pass the trace
// on to the server; none when t is nil.
func (t *Tracing) DialOptions() []grpc.DialOption {
	if t == nil {
		return nil
	}
	return []grpc.DialOption{grpc.WithStatsHandler(otelgrpc.NewClientHandler(t.options()...))}
}

// Tracer is for spans of lookahead's own (a cache lookup); nil when t is
// nil.
func (t *Tracing) Tracer(name string) trace.Tracer {
	if t == nil {
		return nil
	}
	return t.tp.Tracer(name)
}

// Stop is Close within 5 seconds, logging a failure: for a command's
// shutdown, where nothing else can be done about it.
func (t *Tracing) Stop(log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.Close(ctx); err != nil {
		log.Warn("tracing", "err", err)
	}
}

// Close flushes the spans not yet exported and stops; ctx bounds the wait.
func (t *Tracing) Close(ctx context.Context) error {
	if t == nil {
		return nil
	}
	if err := t.tp.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("tracing shutdown: %w", err)
	}
	return nil
}
