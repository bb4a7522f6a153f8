package fetch

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/metrics"
	"github.com/lookahead-dev/lookahead/internal/metrics/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type rig struct {
	f *Fetcher
	c *cache.Cache
	m *metrics.Set
}

func newRig(t *testing.T, o Origin, cfg Config, cc cache.Config) *rig {
	t.Helper()
	m := metrics.New(prometheus.NewRegistry())
	c, err := cache.New(cc, wire.Cache(m))
	require.NoError(t, err)
	cfg.Metrics = wire.Fetch(m)
	f, err := New(cfg, o, c)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return &rig{f: f, c: c, m: m}
}

// get answers one id, with its result, or nil when it does not exist.
func (r *rig) get(t *testing.T, id string) (*Result, error) {
	t.Helper()
	a, err := r.f.Get(context.Background(), []string{id})
	if err != nil {
		return nil, err
	}
	if len(a.Results) == 0 {
		return nil, nil
	}
	return &a.Results[0], nil
}
