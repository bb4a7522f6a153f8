package metrics_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/metrics"
)

// touchAll gives every collector of s one sample, so that gathering shows
// each family: vectors get one child with as many label values as they
// take. It walks the struct, so a collector added to Set is linted without
// a change here; a field of a kind it does not know fails the test.
func touchAll(t *testing.T, s *metrics.Set) int {
	t.Helper()
	v := reflect.ValueOf(s).Elem()
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Name
		switch c := v.Field(i).Interface().(type) {
		case prometheus.Gauge: // before Counter: a Gauge has Inc and Add too
			c.Set(1)
		case prometheus.Counter:
			c.Inc()
		case *prometheus.CounterVec:
			c.WithLabelValues(labelValues(t, name, c.MetricVec)...).Inc()
		case *prometheus.HistogramVec:
			c.WithLabelValues(labelValues(t, name, c.MetricVec)...).Observe(0.001)
		case *prometheus.GaugeVec:
			c.WithLabelValues(labelValues(t, name, c.MetricVec)...).Set(1)
		case prometheus.Histogram:
			c.Observe(0.001)
		default:
			t.Fatalf("Set.%s: %T is not known to touchAll; add a case", name, c)
		}
	}
	return v.NumField()
}

// labelValues finds how many labels vec takes by asking for children with
// 0, 1, 2, ... values until one is accepted.
func labelValues(t *testing.T, field string, vec *prometheus.MetricVec) []string {
	t.Helper()
	for n := 0; n <= 8; n++ {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = "x"
		}
		if _, err := vec.GetMetricWithLabelValues(vals...); err == nil {
			vec.DeleteLabelValues(vals...)
			return vals
		}
	}
	t.Fatalf("Set.%s: no label count from 0 to 8 fits", field)
	return nil
}

func newTouchedRegistry(t *testing.T) (*prometheus.Registry, int) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry() // also checks Describe against Collect
	n := touchAll(t, metrics.New(reg))
	metrics.RegisterCacheSize(reg, func() map[string]metrics.TierStats {
		return map[string]metrics.TierStats{
			metrics.TierMain:     {Bytes: 1 << 20, Objects: 100},
			metrics.TierPrefetch: {Bytes: 1 << 10, Objects: 1},
		}
	})
	return reg, n + 2 // lookahead_cache_bytes and lookahead_cache_objects
}

func TestMetricsLint(t *testing.T) {
	reg, want := newTouchedRegistry(t)
	fams, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, fams, want, "every collector shows one family once touched")
	for _, f := range fams {
		assert.True(t, strings.HasPrefix(f.GetName(), "lookahead_"), "%s: lookahead's metrics are prefixed lookahead_", f.GetName())
		assert.NotEmpty(t, f.GetHelp(), f.GetName())
	}

	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}

	t.Run("promtool check metrics", func(t *testing.T) {
		promtool, err := exec.LookPath("promtool")
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatal("promtool is not on PATH; CI must install it (Debian package prometheus)")
			}
			t.Skip("promtool is not on PATH (Debian package prometheus): exposition not checked")
		}
		var text bytes.Buffer
		enc := expfmt.NewEncoder(&text, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, f := range fams {
			require.NoError(t, enc.Encode(f))
		}
		path := filepath.Join(t.TempDir(), "metrics.txt")
		require.NoError(t, os.WriteFile(path, text.Bytes(), 0o644))

		f, err := os.Open(path)
		require.NoError(t, err)
		defer f.Close()
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = f
		out, err := cmd.CombinedOutput()
		assert.NoError(t, err, "promtool check metrics on %s:\n%s", path, out)
		assert.Empty(t, strings.TrimSpace(string(out)), "promtool reports problems")
	})
}
