package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

// TestStreamLimitIsPerConnection: with --max-concurrent-streams 1, a
// connection whose one request waits on the origin cannot start another
// (it waits in the client and never reaches the sidecar), while a request
// on another connection is served.
func TestStreamLimitIsPerConnection(t *testing.T) {
	o := origintest.New(&graph.Object{ID: "a"}, &graph.Object{ID: "b"}, &graph.Object{ID: "c"})
	o.Misbehave(origintest.Misbehaviour{Hang: true})
	addr, stop := startSidecar(t, "--origin", o.StartTCP(t), "--max-concurrent-streams", "1", "--origin-timeout", "0")
	flooding, other := dialSidecar(t, addr), dialSidecar(t, addr)
	held := make(chan error, 2)
	go func() { _, err := flooding.Get(context.Background(), &lookaheadv1.GetRequest{Id: "a"}); held <- err }()
	require.Eventually(t, func() bool { return o.Calls("BatchGet") == 1 }, 30*time.Second, 10*time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := flooding.Get(ctx, &lookaheadv1.GetRequest{Id: "b"})
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "%v", err)
	assert.Equal(t, 1, o.Calls("BatchGet"), "the second request on the flooding connection reached the sidecar")

	go func() { _, err := other.Get(context.Background(), &lookaheadv1.GetRequest{Id: "c"}); held <- err }()
	require.Eventually(t, func() bool { return o.Calls("BatchGet") == 2 }, 30*time.Second, 10*time.Millisecond,
		"the other connection's request did not reach the origin")
	stop()
	for range 2 {
		err := <-held
		assert.Contains(t, []codes.Code{codes.Unavailable, codes.Canceled}, status.Code(err), "%v", err)
	}
}

// TestConnectionLimitIsPerListener: with --max-connections 1, a second
// connection is not accepted while the first is open (its request waits,
// here until its deadline), and is served once the first closes.
func TestConnectionLimitIsPerListener(t *testing.T) {
	o := origintest.New(&graph.Object{ID: "a"})
	addr, _ := startSidecar(t, "--origin", o.StartTCP(t), "--max-connections", "1")
	first, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	_, err = lookaheadv1.NewSidecarServiceClient(first).Get(context.Background(), &lookaheadv1.GetRequest{Id: "a"})
	require.NoError(t, err, "the first connection is served")

	second := dialSidecar(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = second.Get(ctx, &lookaheadv1.GetRequest{Id: "a"})
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "a second connection was served beside the first: %v", err)

	require.NoError(t, first.Close())
	_, err = second.Get(context.Background(), &lookaheadv1.GetRequest{Id: "a"}, grpc.WaitForReady(true))
	assert.NoError(t, err, "the second connection is served once the first closed")
}

// startSidecar runs the sidecar with args (and its own listeners, address
// file and a 1 s drain) until stop, which waits for it; addr is its gRPC
// address.
func startSidecar(t *testing.T, args ...string) (addr string, stop func()) {
	t.Helper()
	opts, err := parseFlags(append([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "",
		"--addr-file", filepath.Join(t.TempDir(), "addrs"), "--watch=false", "--drain-timeout", "1s"}, args...))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, opts, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(opts.addrFile)
		addr = strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], "grpc ")
		return err == nil
	}, 30*time.Second, 10*time.Millisecond)
	stop = sync.OnceFunc(func() {
		cancel() // SIGTERM
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(60 * time.Second):
			t.Fatal("the sidecar did not stop")
		}
	})
	t.Cleanup(stop)
	return addr, stop
}

// dialSidecar opens a client connection of its own to the sidecar at addr.
func dialSidecar(t *testing.T, addr string) lookaheadv1.SidecarServiceClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { cc.Close() })
	return lookaheadv1.NewSidecarServiceClient(cc)
}

// TestSilentConnectionIsCutBeforeItsHandshake: a peer that opens a TCP
// connection and never speaks holds one of --max-connections places until
// the sidecar gives up on its handshake (--keepalive-timeout, where gRPC's
// own wait is two minutes); then a client that waited is served.
func TestSilentConnectionIsCutBeforeItsHandshake(t *testing.T) {
	o := origintest.New(&graph.Object{ID: "a"})
	addr, _ := startSidecar(t, "--origin", o.StartTCP(t), "--max-connections", "1", "--keepalive-timeout", "1s")
	silent, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer silent.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = dialSidecar(t, addr).Get(ctx, &lookaheadv1.GetRequest{Id: "a"}, grpc.WaitForReady(true))
	require.NoError(t, err, "served once the silent connection was cut")
	require.NoError(t, silent.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = io.ReadAll(silent) // the sidecar's settings, then the end
	assert.NoError(t, err, "the sidecar closed the silent connection")
}
