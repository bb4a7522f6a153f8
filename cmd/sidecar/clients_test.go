package main

import (
	"context"
	"io"
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
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

// TestClosedConnectionsSpeculationIsCut: the sidecar as it serves (its own
// gRPC server) makes each connection a prefetch.Client, so closing the one
// whose Get scheduled speculation cuts that speculation, here at a slow
// origin.
func TestClosedConnectionsSpeculationIsCut(t *testing.T) {
	o := origintest.New(&graph.Object{ID: "a", Refs: []graph.Ref{{Field: "next", ID: "b"}}}, &graph.Object{ID: "b"})
	o.Misbehave(origintest.Misbehaviour{Delay: 2 * time.Second})
	addrs := filepath.Join(t.TempDir(), "addrs")
	addr, _ := startSidecar(t, "--origin", o.StartTCP(t), "--prefetch-mode", "static", "--prefetch-depth", "1",
		"--metrics-listen", "127.0.0.1:0", "--addr-file", addrs)
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	_, err = lookaheadv1.NewSidecarServiceClient(cc).Get(context.Background(), &lookaheadv1.GetRequest{Id: "a"})
	require.NoError(t, err)
	require.NoError(t, cc.Close()) // the job for b is queued or at the origin, for 2 s
	metrics := "http://" + addrLine(t, addrs, "metrics ") + "/metrics"
	require.Eventually(t, func() bool {
		return strings.Contains(scrape(t, metrics), `lookahead_prefetch_cancelled_total{reason="client_gone"} 1`)
	}, 10*time.Second, 10*time.Millisecond)
}

// addrLine is the address after prefix in the sidecar's address file.
func addrLine(t *testing.T, path, prefix string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	for l := range strings.Lines(string(b)) {
		if a, ok := strings.CutPrefix(strings.TrimSpace(l), prefix); ok {
			return a
		}
	}
	t.Fatalf("no %q line in %s", prefix, b)
	return ""
}

// scrape is the text of url's metrics.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}
