package main

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/doccheck"
)

const readme = "../../README.md"

// TestMetricsDocumented starts the sidecar as main does and compares every
// metric it registers with the README's table of sidecar metrics, both
// ways.
func TestMetricsDocumented(t *testing.T) {
	dir := t.TempDir()
	o, err := parseFlags([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
		"--origin", "127.0.0.1:1", "--addr-file", filepath.Join(dir, "addrs"), "--drain-timeout", "1s"})
	require.NoError(t, err)
	doccheck.MetricsDocumented(t, readme, "Sidecar metrics", o.addrFile,
		func(ctx context.Context, reg *doccheck.Recorder) error {
			o.registry = reg
			return run(ctx, o, slog.New(slog.NewTextHandler(io.Discard, nil)))
		})
}

// TestFlagsDocumented: every flag of the sidecar has a row in the README's
// configuration reference, and every row names a flag.
func TestFlagsDocumented(t *testing.T) {
	o, err := parseFlags(nil)
	require.NoError(t, err)
	doccheck.SameNames(t, readme, "sidecar", "flag", doccheck.Flags(o.cmd.Settings))
}
