package server

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/lookahead-dev/lookahead/internal/fetch"
)

// lookupSpan starts the span of one cache lookup (the origin round trips
// of its misses become its children) when the server traces; a nil span
// and ctx unchanged otherwise, so that tracing off costs nothing.
func (s *Server) lookupSpan(ctx context.Context, ids int) (context.Context, trace.Span) {
	if s.cfg.Tracer == nil {
		return ctx, nil
	}
	return s.cfg.Tracer.Start(ctx, "cache lookup", trace.WithAttributes(attribute.Int("lookahead.ids", ids)))
}

// endLookup records what the lookup found and ends its span.
func endLookup(span trace.Span, a *fetch.Answer, err error) {
	if span == nil {
		return
	}
	defer span.End()
	if err != nil {
		span.RecordError(err)
		span.SetStatus(otelcodes.Error, err.Error())
		return
	}
	var hits, misses int
	for _, r := range a.Results {
		if r.Status == fetch.StatusMiss || r.Status == fetch.StatusJoined {
			misses++
		} else {
			hits++
		}
	}
	span.SetAttributes(attribute.Int("lookahead.hits", hits), attribute.Int("lookahead.misses", misses),
		attribute.Int("lookahead.missing", len(a.Missing)))
}
