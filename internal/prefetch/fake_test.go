package prefetch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/fetch/fetchtest"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/metrics"
	"github.com/lookahead-dev/lookahead/internal/metrics/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The fetcher's names, as these tests use them.
type (
	Status = fetch.Status
	Result = fetch.Result
)

const (
	StatusMiss          = fetch.StatusMiss
	StatusHit           = fetch.StatusHit
	StatusHitPrefetched = fetch.StatusHitPrefetched
	StatusJoined        = fetch.StatusJoined
)

type fakeOrigin = fetchtest.Origin
type fakeExpander = fetchtest.Expander

func newFakeOrigin(objs []*graph.Object) *fakeOrigin { return fetchtest.NewOrigin(objs) }

func tree(t *testing.T, fanout, levels int) []*graph.Object { return fetchtest.Tree(t, fanout, levels) }

// engine is the sidecar's read path as the server drives it: the fetcher
// answers, then the scheduler is told.
type engine struct {
	f *fetch.Fetcher
	s *Scheduler
}

func (e *engine) Get(ctx context.Context, ids []string, h Hint) ([]Result, []string, error) {
	a, err := e.f.Get(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	e.s.After(ctx, a, h)
	return a.Results, a.Missing, nil
}

func (e *engine) Graph(ctx context.Context, roots []string, b graph.Budget, emit func(int, []Result) error) ([]string, error) {
	return e.f.Walk(ctx, roots, b, 0, emit)
}

func (e *engine) Close() { e.s.Close() }

type rig struct {
	engine *engine
	cache  *cache.Cache
	m      *metrics.Set
}

func newRig(t *testing.T, o fetch.Origin, cfg Config, p Planner, cc cache.Config) *rig {
	return newRigWith(t, o, cfg, fetch.Config{}, p, cc)
}

// newRigBatch is newRig with the fetcher's batch size.
func newRigBatch(t *testing.T, o fetch.Origin, cfg Config, batchSize int, p Planner, cc cache.Config) *rig {
	return newRigWith(t, o, cfg, fetch.Config{BatchSize: batchSize}, p, cc)
}

// newRigWith is newRig with the fetcher's configuration.
func newRigWith(t testing.TB, o fetch.Origin, cfg Config, fc fetch.Config, p Planner, cc cache.Config) *rig {
	t.Helper()
	m := metrics.New(prometheus.NewRegistry())
	c, err := cache.New(cc, wire.Cache(m))
	require.NoError(t, err)
	fc.Metrics = wire.Fetch(m)
	f, err := fetch.New(fc, o, c)
	require.NoError(t, err)
	cfg.Metrics = wire.Prefetch(m)
	cfg.TierBytes = c.PrefetchBytes()
	s, err := New(cfg, f, p)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close(); c.Close() })
	return &rig{engine: &engine{f: f, s: s}, cache: c, m: m}
}

func fmtInt(i int) string { return fmt.Sprint(i) }

// waitJobs waits until no job of s is queued and running of them run (any
// number when running is negative).
func waitJobs(t *testing.T, s *Scheduler, running int, msg string) {
	t.Helper()
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.jobs.len() == 0 && (running < 0 || s.running == running)
	}, 10*time.Second, time.Millisecond, msg)
}
