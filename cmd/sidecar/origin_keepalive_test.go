package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

// TestSilentOriginIsFoundGone: the origin goes silent without closing the
// sidecar's connection (a toxiproxy in between drops everything from then
// on, as a host that vanished or a partition would). The change stream
// then sends nothing, which looks the same as an origin without writes;
// the sidecar's keepalive pings on the origin connection find it gone, so
// the stream is reported down (lookahead_watch_connected 0) and cached
// objects stop being trusted after --watch-grace, where without pings the
// connection would look alive until TCP gave up, about 15 minutes later.
func TestSilentOriginIsFoundGone(t *testing.T) {
	o := origintest.New(&graph.Object{ID: "a", Version: 1})
	proxy, silence := origintest.SilentProxy(t, o.StartTCP(t))
	addrs := filepath.Join(t.TempDir(), "addrs")
	startSidecar(t, "--origin", proxy, "--watch", "--origin-keepalive-time", "10s", "--origin-keepalive-timeout", "1s",
		"--metrics-listen", "127.0.0.1:0", "--addr-file", addrs)
	metrics := "http://" + addrLine(t, addrs, "metrics ") + "/metrics"
	connected := func() bool { return strings.Contains(scrape(t, metrics), "\nlookahead_watch_connected 1\n") }
	require.Eventually(t, connected, 30*time.Second, 10*time.Millisecond, "the change stream is up")

	silence()
	require.Eventually(t, func() bool { return !connected() }, 60*time.Second, 100*time.Millisecond,
		"the silent origin's connection was found gone and the change stream reported down")
}
