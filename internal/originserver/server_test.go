package originserver

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/store"
)

func TestNew(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "origin.db"), store.Config{})
	require.NoError(t, err)
	defer st.Close()

	tests := []struct {
		name     string
		st       Store
		cfg      Config
		wantErrs []string
	}{
		{name: "zero config", st: st},
		{
			name: "negative values",
			st:   st,
			cfg:  Config{MaxIDs: -1, MaxDepth: -2, MaxObjects: -3, Latency: -time.Second, MessageObjects: -4, MessageBytes: -5, WatchBatch: -6},
			wantErrs: []string{
				"max ids -1 is negative", "max depth -2 is negative", "max objects -3 is negative",
				"latency -1s is negative", "message objects -4 is negative", "message bytes -5 is negative",
				"watch batch -6 is negative",
			},
		},
		{name: "nil store", wantErrs: []string{"nil store"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := New(tc.st, tc.cfg, prometheus.NewRegistry())
			if len(tc.wantErrs) == 0 {
				require.NoError(t, err)
				assert.Equal(t, Config{MaxIDs: 10000, MaxDepth: 64, MaxObjects: 1_000_000, MessageObjects: 1000, MessageBytes: 1 << 20, WatchBatch: 1000}, srv.cfg)
				return
			}
			require.Error(t, err)
			for _, want := range tc.wantErrs {
				assert.Contains(t, err.Error(), want)
			}
		})
	}

	t.Run("metrics registered twice", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		_, err := New(st, Config{}, reg)
		require.NoError(t, err)
		_, err = New(st, Config{}, reg)
		assert.ErrorContains(t, err, "registering metrics")
	})
	t.Run("nil registerer", func(t *testing.T) {
		_, err := New(st, Config{}, nil)
		assert.NoError(t, err)
	})
}
