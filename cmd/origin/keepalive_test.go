package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

// TestVanishedSidecarsWatchIsDropped: a sidecar's change stream whose
// connection goes silent without closing (a toxiproxy in between drops
// everything from then on, as a lost node would) is found gone by the
// origin's keepalive pings and ended (lookahead_origin_watch_streams back
// to 0), where gRPC's own pings would wait two hours.
func TestVanishedSidecarsWatchIsDropped(t *testing.T) {
	dir := t.TempDir()
	addrs := filepath.Join(dir, "addrs")
	o, err := parseFlags([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--data", dir,
		"--addr-file", addrs, "--keepalive-time", "1s", "--keepalive-timeout", "1s", "--drain-timeout", "1s"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, o, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	var lines []string
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(addrs)
		lines = strings.Fields(string(b))
		return err == nil && len(lines) == 4
	}, 30*time.Second, 10*time.Millisecond)
	grpcAddr, metrics := lines[1], "http://"+lines[3]+"/metrics"

	proxy, silence := origintest.SilentProxy(t, grpcAddr)
	cc, err := grpc.NewClient(proxy, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { cc.Close() })
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	_, err = lookaheadv1.NewOriginServiceClient(cc).Watch(wctx, &lookaheadv1.WatchRequest{})
	require.NoError(t, err)
	streams := func() string {
		resp, err := http.Get(metrics)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		for l := range strings.Lines(string(b)) {
			if strings.HasPrefix(l, "lookahead_origin_watch_streams ") {
				return strings.TrimSpace(l)
			}
		}
		return ""
	}
	require.Eventually(t, func() bool { return streams() == "lookahead_origin_watch_streams 1" }, 10*time.Second, 10*time.Millisecond)

	silence()
	require.Eventually(t, func() bool { return streams() == "lookahead_origin_watch_streams 0" }, 30*time.Second, 100*time.Millisecond,
		"the vanished sidecar's change stream was ended")
}
