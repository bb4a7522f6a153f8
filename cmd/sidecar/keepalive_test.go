package main

import (
	"context"
	"errors"
	"io"
	"strconv"
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

// TestVanishedClientIsCut: a client whose GetGraph holds the sidecar's one
// --max-walks place goes silent without closing its connection (a
// toxiproxy in between drops everything from then on, as a crash or a
// partition would). The sidecar's keepalive pings find it gone and cut its
// connection, so that the place is freed and another client's GetGraph,
// refused meanwhile, is served; with gRPC's own keepalive the place would
// be held for two hours.
func TestVanishedClientIsCut(t *testing.T) {
	o := origintest.New()
	o.Misbehave(origintest.Misbehaviour{Generate: heavy})
	addr, _ := startSidecar(t, "--origin", o.StartTCP(t), "--max-walks", "1", "--keepalive-time", "1s", "--keepalive-timeout", "1s")
	proxy, silence := origintest.SilentProxy(t, addr)
	cc, err := grpc.NewClient(proxy, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10)) // windows that fill up
	require.NoError(t, err)
	t.Cleanup(func() { cc.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	depth := uint32(12)
	walk, err := lookaheadv1.NewSidecarServiceClient(cc).GetGraph(ctx, &lookaheadv1.GetGraphRequest{Roots: []string{"h"}, Depth: &depth})
	require.NoError(t, err)
	_, err = walk.Recv() // the walk is under way; its client reads nothing more
	require.NoError(t, err)

	other := dialSidecar(t, addr)
	one := uint32(1)
	graph := func() error {
		s, err := other.GetGraph(ctx, &lookaheadv1.GetGraphRequest{Roots: []string{"h/0"}, Depth: &one})
		for err == nil {
			_, err = s.Recv()
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	require.Equal(t, codes.ResourceExhausted, status.Code(graph()), "the walk holds the one place")
	silence()
	assert.Eventually(t, func() bool { return graph() == nil }, 30*time.Second, 100*time.Millisecond,
		"the vanished client's connection was cut and its place freed")
}

// heavy generates, for "h" and the ids below it, an object of 8 KiB with
// two children: a walk its client's flow-control window cannot hold.
func heavy(id string) *graph.Object {
	if id != "h" && !strings.HasPrefix(id, "h/") {
		return nil
	}
	return &graph.Object{ID: id, Version: 1, Payload: make([]byte, 8<<10),
		Refs: []graph.Ref{{Field: "c", ID: id + "/0"}, {Field: "c", ID: id + "/" + strconv.Itoa(1)}}}
}
