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
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

// A stop completes whatever the origin and the clients do: requests held by
// a hung origin (a Get, a GetGraph whose Expand never answers) are cut at
// --drain-timeout, and run returns.
func TestStopCompletesWithAHungOrigin(t *testing.T) {
	o := origintest.New(&graph.Object{ID: "a", Refs: []graph.Ref{{Field: "f", ID: "b"}}}, &graph.Object{ID: "b"})
	o.Misbehave(origintest.Misbehaviour{Hang: true})
	dir := t.TempDir()
	opts, err := parseFlags([]string{"--origin", o.StartTCP(t), "--listen", "127.0.0.1:0", "--metrics-listen", "",
		"--addr-file", filepath.Join(dir, "addrs"), "--watch=false", "--drain-timeout", "1s", "--origin-timeout", "0"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx, opts, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	var addr string
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(opts.addrFile)
		addr = strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], "grpc ")
		return err == nil
	}, 30*time.Second, 10*time.Millisecond)
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer cc.Close()
	c := lookaheadv1.NewSidecarServiceClient(cc)
	calls := make(chan error, 2)
	go func() {
		_, err := c.Get(context.Background(), &lookaheadv1.GetRequest{Id: "a"})
		calls <- err
	}()
	go func() {
		s, err := c.GetGraph(context.Background(), &lookaheadv1.GetGraphRequest{Roots: []string{"b"}})
		if err == nil {
			_, err = s.Recv()
		}
		calls <- err
	}()
	require.Eventually(t, func() bool { return o.Calls("BatchGet")+o.Calls("Expand") >= 2 }, 30*time.Second, 10*time.Millisecond)

	cancel() // SIGTERM
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(60 * time.Second):
		t.Fatal("the sidecar did not stop")
	}
	for range 2 {
		err := <-calls
		assert.Contains(t, []codes.Code{codes.Unavailable, codes.Canceled}, status.Code(err), "%v", err)
	}
}
