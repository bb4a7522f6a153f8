package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/doccheck"
)

const readme = "../../README.md"

// TestMetricsDocumented starts the sidecar as main does and compares every
// metric it registers with the README's table of sidecar metrics, both
// ways. The Go runtime's and the process's are documented as a family.
func TestMetricsDocumented(t *testing.T) {
	dir := t.TempDir()
	o, err := parseFlags([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
		"--origin", "127.0.0.1:1", "--addr-file", filepath.Join(dir, "addrs"), "--drain-timeout", "1s"})
	require.NoError(t, err)
	rec := doccheck.NewRecorder()
	o.registry = rec
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, o, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	require.Eventually(t, func() bool {
		_, err := os.Stat(o.addrFile)
		return err == nil
	}, 30*time.Second, 10*time.Millisecond, "the sidecar writes its addresses once serving")
	cancel()
	require.NoError(t, <-done)

	section, err := doccheck.Section(readme, "Sidecar metrics")
	require.NoError(t, err)
	documented := doccheck.TableNames(section)
	registered := rec.Names("go_", "process_")
	for _, n := range registered {
		assert.Contains(t, documented, n, "the sidecar registers %s: add a row to the README's sidecar metrics table", n)
	}
	for _, n := range documented {
		assert.Contains(t, registered, n, "the README documents %s, which the sidecar does not register", n)
	}
	assert.Contains(t, section, "`go_*`", "the Go runtime's metrics are mentioned")
}

// TestFlagsDocumented: every flag of the sidecar has a row in the README's
// configuration reference, and every row names a flag.
func TestFlagsDocumented(t *testing.T) {
	o, err := parseFlags(nil)
	require.NoError(t, err)
	var flags []string
	for _, s := range o.settings {
		name, _, _ := strings.Cut(s, "=")
		flags = append(flags, "--"+name)
	}
	for _, name := range []string{"check-config", "version"} { // actions, not settings
		flags = append(flags, "--"+name)
	}
	section, err := doccheck.Section(readme, "sidecar")
	require.NoError(t, err)
	documented := doccheck.TableNames(section)
	for _, f := range flags {
		assert.Contains(t, documented, f, "add %s to the README's sidecar configuration table", f)
	}
	for _, d := range documented {
		assert.Contains(t, flags, d, "the README's sidecar configuration documents %s, which is no flag", d)
	}
}
