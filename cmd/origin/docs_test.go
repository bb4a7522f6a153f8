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
	doccheck.RunUntilServing(t, o.addrFile, func(ctx context.Context) error {
		return run(ctx, o, slog.New(slog.NewTextHandler(io.Discard, nil)))
	})
	doccheck.SameNames(t, readme, "Origin metrics", "metric", rec.Names("go_", "process_", "promhttp_"))
}

// TestFlagsDocumented: every flag of the origin has a row in the README's
// configuration reference, and every row names a flag.
func TestFlagsDocumented(t *testing.T) {
	o, err := parseFlags(nil)
	require.NoError(t, err)
	doccheck.SameNames(t, readme, "origin", "flag", doccheck.Flags(o.cmd.Settings))
}
