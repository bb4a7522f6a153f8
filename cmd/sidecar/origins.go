package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/lookahead-dev/lookahead/internal/coherence"
	"github.com/lookahead-dev/lookahead/internal/metrics"
	"github.com/lookahead-dev/lookahead/internal/metrics/wire"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/server"
)

// originRoute is one --origin: ids starting with prefix go to target; the
// empty prefix is the default route.
type originRoute struct{ prefix, target string }

// name is the route's metrics label: its prefix, or "default".
func (r originRoute) name() string {
	if r.prefix == "" {
		return metrics.DefaultRoute
	}
	return r.prefix
}

// originFlag is --origin, given once per route: "target" for the default
// route, "prefix=target" for the ids starting with prefix. A value may also
// list routes separated by commas (a YAML list, an environment variable);
// the addresses of a static:/// target, commas too, stay with it.
type originFlag struct {
	routes []originRoute
	set    bool // the first Set replaces the default
}

func (f *originFlag) String() string {
	parts := make([]string, len(f.routes))
	for i, r := range f.routes {
		parts[i] = r.target
		if r.prefix != "" {
			parts[i] = r.prefix + "=" + r.target
		}
	}
	return strings.Join(parts, ",")
}

func (f *originFlag) Set(v string) error {
	if !f.set {
		f.routes, f.set = nil, true
	}
	if strings.TrimSpace(v) == "" {
		return errors.New("-origin is empty: want host:port or a gRPC target")
	}
	for _, part := range splitRoutes(v) {
		r := originRoute{target: strings.TrimSpace(part)}
		if p, t, ok := strings.Cut(r.target, "="); ok {
			r.prefix, r.target = p, t
			if p == "" {
				return fmt.Errorf("%q: empty prefix; give the default route as a bare target", part)
			}
		}
		if r.target == "" {
			return fmt.Errorf("%q: empty target", part)
		}
		for _, o := range f.routes {
			if o.prefix == r.prefix {
				return fmt.Errorf("%q: route %q given twice", part, r.name())
			}
		}
		f.routes = append(f.routes, r)
	}
	return nil
}

// origins are the sidecar's origin connections and clients, one per route.
type origins struct {
	routes  []originRoute
	conns   []*grpc.ClientConn
	clients []*origin.Client
	api     origin.Origin // the one client, or a Router over several
}

// dialOrigins connects to every route's origin.
func (t *transportOptions) dialOrigins(routes []originRoute, m *metrics.Set) (*origins, error) {
	os := &origins{routes: routes}
	var rs []origin.Route
	for _, r := range routes {
		cc, err := t.dial(r.target)
		if err != nil {
			os.Close()
			return nil, fmt.Errorf("origin %s: %w", r.target, err)
		}
		os.conns = append(os.conns, cc)
		cfg := t.client
		cfg.Route = r.name()
		c, err := origin.New(cc, cfg, m)
		if err != nil {
			os.Close()
			return nil, fmt.Errorf("origin client config: %w", err)
		}
		os.clients = append(os.clients, c)
		rs = append(rs, origin.Route{Prefix: r.prefix, Origin: c})
	}
	if len(routes) == 1 && routes[0].prefix == "" {
		os.api = os.clients[0]
		return os, nil
	}
	router, err := origin.NewRouter(rs)
	if err != nil {
		os.Close()
		return nil, err
	}
	os.api = router
	return os, nil
}

// Close closes every connection.
func (os *origins) Close() {
	for _, cc := range os.conns {
		_ = cc.Close()
	}
}

// originWatch is every route's coherence: identity, health probe and, when
// watching, change stream.
type originWatch struct {
	probers  []*coherence.Prober
	clients  []*origin.Client
	names    []string
	watchers []*coherence.Watcher
}

// follow sets up each route's coherence; a route's new dataset resets r.
func (os *origins) follow(cfg coherence.Config, watch bool, inv coherence.Invalidator, r coherence.Resetter, m *metrics.Set, log *slog.Logger) *originWatch {
	ow := &originWatch{}
	for i, c := range os.clients {
		name := os.routes[i].name()
		rlog := log.With("origin", name)
		ident := coherence.NewIdentity(r, m.OriginDatasetChanges.WithLabelValues(name), rlog)
		ow.probers = append(ow.probers, coherence.NewProber(c, ident, rlog))
		ow.clients = append(ow.clients, c)
		ow.names = append(ow.names, name)
		if watch {
			ow.watchers = append(ow.watchers, coherence.New(cfg, coherence.FromClient(c), inv, ident, wire.Coherence(m, name), rlog))
		}
	}
	return ow
}

// Trust is trusted while every route's change stream is (see
// coherence.Watcher.Trust); beyond is the longest.
func (ow *originWatch) Trust() (bool, time.Duration) {
	trusted, beyond := true, time.Duration(0)
	for _, w := range ow.watchers {
		t, b := w.Trust()
		trusted = trusted && t
		beyond = max(beyond, b)
	}
	return trusted, beyond
}

// readiness returns the sidecar's readiness check: ready while every
// route's origin is (its probe, and the sidecar's own calls to it: see
// server.Readiness).
func (ow *originWatch) readiness(cfg server.ReadinessConfig) (func(context.Context) error, error) {
	checks := make([]*server.Readiness, len(ow.probers))
	for i, p := range ow.probers {
		r, err := server.NewReadiness(cfg, p.Probe, ow.clients[i])
		if err != nil {
			return nil, err
		}
		checks[i] = r
	}
	if len(checks) == 1 {
		return checks[0].Check, nil
	}
	return func(ctx context.Context) error {
		var errs []error
		for i, r := range checks {
			if err := r.Check(ctx); err != nil {
				errs = append(errs, fmt.Errorf("origin %s: %w", ow.names[i], err))
			}
		}
		return errors.Join(errs...)
	}, nil
}

// Run follows every route's change stream until ctx ends.
func (ow *originWatch) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, w := range ow.watchers {
		wg.Go(func() { _ = w.Run(ctx) })
	}
	wg.Wait()
}

// splitRoutes splits a list of routes at its commas, except those between
// the addresses of a static:/// target: a bare host:port after one
// continues its list.
func splitRoutes(v string) []string {
	var out []string
	for _, part := range strings.Split(v, ",") {
		if n := len(out); n > 0 && !strings.ContainsAny(part, "=/") && strings.Contains(out[n-1], origin.StaticScheme+":///") {
			out[n-1] += "," + part
			continue
		}
		out = append(out, part)
	}
	return out
}
