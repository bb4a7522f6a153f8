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

	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/doccheck"
)

const readme = "../../README.md"

// TestMetricsDocumented starts the origin as main does and compares every
// metric it registers with the README's table of origin metrics, both ways.
// The Go runtime's, the process's and the /metrics handler's own are
// documented as families.
func TestMetricsDocumented(t *testing.T) {
	dir := t.TempDir()
	o, err := parseFlags([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
		"--data", dir, "--addr-file", filepath.Join(dir, "addrs"), "--drain-timeout", "1s"})
	require.NoError(t, err)
	rec := doccheck.NewRecorder()
	o.registry = rec
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, o, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	require.Eventually(t, func() bool {
		_, err := os.Stat(o.addrFile)
		return err == nil
	}, 30*time.Second, 10*time.Millisecond, "the origin writes its addresses once serving")
	cancel()
	require.NoError(t, <-done)
	doccheck.SameNames(t, readme, "Origin metrics", "metric", rec.Names("go_", "process_", "promhttp_"))
}

// TestFlagsDocumented: every flag of the origin has a row in the README's
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
	doccheck.SameNames(t, readme, "origin", "flag", flags)
}
