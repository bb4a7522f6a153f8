package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/lookahead-dev/lookahead/internal/flagconf"
)

// finish converts the text settings and validates every setting: the one
// path for --check-config and for startup, run after flags, environment and
// the config file have been applied. The server's limits keep their rules in
// originserver.Config.Validate; the rules here are the flags' own. Every
// broken setting is reported, each naming its flag.
func (o *options) finish() error {
	errs := []error{o.cmd.FinishLogLevel()}
	o.random.payloadBytes, o.random.seed = o.tasks.payloadBytes, o.tasks.seed
	o.social.payloadBytes, o.social.seed = o.tasks.payloadBytes, o.tasks.seed
	switch o.seed {
	case "none", "tasks", "random", "social":
	default:
		errs = append(errs, fmt.Errorf("-seed %q: want none, tasks, random or social", o.seed))
	}
	errs = append(errs, o.tasks.validate(), o.random.validate(), o.social.validate())
	// Config zero values mean "the default": a flag set to 0 would silently
	// run with the default, so 0 is refused here.
	for _, v := range []struct {
		flag string
		n    int
	}{{"max-ids", o.server.MaxIDs}, {"max-depth", o.server.MaxDepth}, {"max-objects", o.server.MaxObjects}} {
		if v.n == 0 {
			errs = append(errs, fmt.Errorf("-%s 0: must be at least 1", v.flag))
		}
	}
	if err := o.server.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("-max-ids, -max-depth, -max-objects, -latency, -shed-speculative-above: %w", err))
	}
	errs = append(errs, o.pg.validate(o))
	if o.listen == "" {
		errs = append(errs, errors.New("-listen is empty: nothing to serve on"))
	}
	errs = append(errs, flagconf.ListenAddr("listen", o.listen), flagconf.ListenAddr("metrics-listen", o.metricsListen))
	if o.dataDir == "" {
		errs = append(errs, errors.New("-data is empty: want the store's directory"))
	}
	if o.loadPath != "" {
		if _, err := os.Stat(o.loadPath); err != nil {
			errs = append(errs, fmt.Errorf("-load: %w", err))
		}
	}
	if err := o.tracing.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("-otlp-endpoint: %w", err))
	}
	if o.drainTimeout < 0 {
		errs = append(errs, fmt.Errorf("-drain-timeout %v: must not be negative", o.drainTimeout))
	}
	errs = append(errs, flagconf.AtLeast("keepalive-time", o.keepaliveTime, time.Second),
		flagconf.AtLeast("keepalive-timeout", o.keepaliveTimeout, time.Second))
	var err error
	if o.tls, err = o.tlsFiles.Load(); err != nil {
		errs = append(errs, fmt.Errorf("-tls-cert, -tls-key, -tls-client-ca: %w", err))
	}
	return errors.Join(errs...)
}
