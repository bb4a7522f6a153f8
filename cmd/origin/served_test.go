package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/launch"
)

// The server is given the opened bbolt store, not run's wrapper around
// it: embedding an interface promotes only that interface's methods, so
// the wrapper hid the store's encoded reads, and every object sent was
// decoded and encoded again.
func TestTheBoltStoreIsServedWithItsEncodedReads(t *testing.T) {
	dir := t.TempDir()
	addrs := filepath.Join(dir, "addrs")
	o, err := parseFlags([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "", "--data", dir,
		"--addr-file", addrs, "--drain-timeout", "1s"})
	require.NoError(t, err)
	var out launch.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, o, slog.New(slog.NewTextHandler(&out, nil))) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	require.Eventually(t, func() bool { _, err := os.Stat(addrs); return err == nil }, 30*time.Second, 10*time.Millisecond)
	assert.Contains(t, out.String(), "msg=serving")
	assert.Contains(t, out.String(), "encoded_reads=true")
}
