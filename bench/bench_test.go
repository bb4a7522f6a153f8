package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/bench/floor"
	"github.com/lookahead-dev/lookahead/internal/launch"
	"github.com/lookahead-dev/lookahead/internal/store/postgres/pgtest"
)

// TestMain lets the test binary serve as W3's floor server, as the
// lookahead-bench binary does: Run re-executes its own executable.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == floor.Command {
		os.Exit(floor.Main(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// TestSmoke runs every workload at tiny sizes against freshly built binaries
// so that the benchmark program keeps working as the product changes. It
// asserts what was produced, never how fast: benchmarks are not tests.
func TestSmoke(t *testing.T) {
	_, err := exec.LookPath("redis-server")
	if _, ci := os.LookupEnv("CI"); err != nil && ci {
		t.Fatal("redis-server is not installed; CI must provide it (.ci/run installs it)")
	}
	withRedis := err == nil
	if !withRedis {
		t.Log("redis-server not installed: running without the redis peer (CI is unset)")
	}
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	bin := t.TempDir()
	require.NoError(t, launch.Build(root, bin, "origin", "sidecar"))

	cfg, err := Preset("smoke")
	require.NoError(t, err)
	out := t.TempDir()
	cfg.Bin, cfg.Out, cfg.Markdown = bin, out, filepath.Join(out, "BENCHMARKS.md")
	cfg.Command, cfg.RequireRedis = "go test ./bench -run TestSmoke", withRedis
	cfg.Progress = logWriter{t}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := Run(ctx, cfg)
	require.NoError(t, err)

	assert.Greater(t, rep.NoPrefetchRoundTrips, 0.0, "W1 read no round trips from the no_prefetch sidecar's /metrics")
	// W1: one table per latency; W2: the summary, the stall hidden, one per think time and the near-cache row's reads; W3: two; W4: one; W5: one per latency;
	// W6: one per latency where PostgreSQL is installed (it must be, under CI); W7: one per latency.
	w6Tables := len(cfg.W6.LatenciesMS)
	if _, err := pgtest.BinDir(); err != nil {
		w6Tables = 0
	} else {
		assert.Contains(t, rep.Markdown, "| lookahead warm |")
	}
	assert.Len(t, rep.Tables, len(cfg.W1.LatenciesMS)+3+len(cfg.W2.Think)+2+1+len(cfg.W5.LatenciesMS)+w6Tables+len(cfg.W7.LatenciesMS))
	for _, h := range []string{"## W1", "## W2", "## W3", "## W4", "## W5", "## W6", "## W7", "| no_prefetch |", "| full_prefetch |", "| peer: batched client |",
		"| friends of friends | off |", "| hot spot | **best static**: ",
		"| chain | default |", "| four at once | **best static**: "} {
		assert.Contains(t, rep.Markdown, h)
	}
	assert.Regexp(t, `Cells where the default was slower than off|The default was neither slower than off`, rep.Markdown,
		"W5 and W7 list where the default loses")
	if withRedis {
		assert.Contains(t, rep.Markdown, "| peer: redis cache-aside | ")
		assert.NotContains(t, rep.Markdown, "redis-server not installed")
	}
	md, err := os.ReadFile(cfg.Markdown)
	require.NoError(t, err)
	assert.Equal(t, rep.Markdown, string(md))
	assert.NotEmpty(t, rep.Plots)
	for _, p := range rep.Plots {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(b), "<svg"), p)
	}
}

// logWriter sends progress lines to the test log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
