package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/prefetch"

	"github.com/lookahead-dev/lookahead/internal/flagconf"
)

// finish converts the text settings and validates every setting: the one
// path for --check-config and for startup, run after flags, environment and
// the config file have been applied. Each package's Config keeps its own
// rules (its Validate); the rules here are the flags' own: a zero that the
// Config would silently read as its default, and settings that conflict.
// Every broken setting is reported, each naming its flag.
func (o *options) finish(mode string) error {
	var errs []error
	o.sched.Mode = prefetch.Mode(mode)
	o.cache.StaleFor = max(o.fetch.StaleWhileRevalidate, o.fetch.StaleIfError)
	if o.fields != "" {
		o.planner.Fields = strings.Split(o.fields, ",")
	}
	errs = append(errs, o.cmd.FinishLogLevel(), o.transport.finish(), o.flagRules())
	errs = append(errs,
		wrap("-prefetch-mode, -prefetch-workers, -prefetch-queue, -prefetch-queue-bytes", o.sched.Validate()),
		wrap("-batch-size, -demand-batches, -stale-*", o.fetch.Validate()),
		wrap("-prefetch-depth, -prefetch-max-objects", o.planner.Validate()),
		wrap("-cache-bytes, -prefetch-bytes, -ttl, -negative-ttl", o.cache.Validate()),
		wrap("-origin-*", origin.Config.Validate(o.transport.client)))
	errs = append(errs, wrap("-otlp-endpoint", o.tracing.Validate()))
	server := o.server
	server.SetDefaults()
	errs = append(errs, wrap("-max-ids, -max-depth, -max-objects, -max-walks, -max-origin-requests, -max-origin-waiting", server.Validate()))
	return errors.Join(errs...)
}

// flagRules are the rules of the sidecar's flags themselves.
func (o *options) flagRules() error {
	var errs []error
	// Config zero values mean "the default": a flag set to 0 would silently
	// run with the default, so 0 is refused here.
	for _, v := range []struct {
		flag string
		n    int64
	}{
		{"prefetch-workers", int64(o.sched.Workers)}, {"batch-size", int64(o.fetch.BatchSize)},
		{"demand-batches", int64(o.fetch.DemandBatches)},
		{"prefetch-queue", int64(o.sched.QueueSize)}, {"max-ids", int64(o.server.MaxIDs)},
		{"max-depth", int64(o.server.MaxDepth)}, {"max-objects", int64(o.server.MaxObjects)}, {"max-walks", int64(o.server.MaxWalks)},
		{"max-origin-requests", int64(o.server.MaxOriginRequests)}, {"max-origin-waiting", int64(o.server.MaxOriginWaiting)},
		{"cache-bytes", o.cache.MainBytes}, {"prefetch-bytes", o.cache.PrefetchBytes}, {"stream-memory-bytes", o.server.StreamBytes},
		{"prefetch-queue-bytes", o.sched.QueueBytes},
	} {
		if v.n == 0 {
			errs = append(errs, fmt.Errorf("-%s 0: must be at least 1", v.flag))
		}
	}
	for _, v := range []struct {
		flag string
		d    time.Duration
		zero bool // 0 is allowed
	}{
		{"health-interval", o.healthInterval, false}, {"watch-grace", o.coherence.Grace, false},
		{"drain-timeout", o.drainTimeout, true},
		{"stale-while-revalidate", o.fetch.StaleWhileRevalidate, true},
		{"stale-if-error", o.fetch.StaleIfError, true},
	} {
		switch {
		case v.d < 0 && v.zero:
			errs = append(errs, fmt.Errorf("-%s %v: must not be negative", v.flag, v.d))
		case v.d <= 0 && !v.zero:
			errs = append(errs, fmt.Errorf("-%s %v: must be positive", v.flag, v.d))
		}
	}
	if o.gcPercent < 1 {
		errs = append(errs, fmt.Errorf("-gc-percent %d: must be at least 1 (GOGC=off in the environment turns collection off)", o.gcPercent))
	}
	if o.planner.Depth > o.server.MaxDepth && o.server.MaxDepth > 0 {
		errs = append(errs, fmt.Errorf("-prefetch-depth %d: must not exceed -max-depth %d", o.planner.Depth, o.server.MaxDepth))
	}
	for i, f := range o.planner.Fields {
		if strings.TrimSpace(f) == "" {
			errs = append(errs, fmt.Errorf("-prefetch-fields %q: field %d is empty", o.fields, i+1))
		}
	}
	if o.listen == "" && o.unixSocket == "" {
		errs = append(errs, errors.New("-listen and -unix-socket are both empty: nothing to serve on"))
	}
	errs = append(errs, flagconf.ListenAddr("listen", o.listen), flagconf.ListenAddr("metrics-listen", o.metricsListen))
	if r := o.readiness.FailureRatio; !(r > 0 && r <= 1) {
		errs = append(errs, fmt.Errorf("-readiness-failure-ratio %v: must be above 0 and at most 1", r))
	}
	if len(o.origins.routes) == 0 {
		errs = append(errs, errors.New("-origin is empty: want host:port or a gRPC target"))
	}
	return errors.Join(errs...)
}

// wrap names the flags behind a package's Config in each of its errors.
func wrap(flags string, err error) error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs := j.Unwrap()
		out := make([]error, len(errs))
		for i, e := range errs {
			out[i] = wrap(flags, e)
		}
		return errors.Join(out...)
	}
	return fmt.Errorf("%s: %w", flags, err)
}
