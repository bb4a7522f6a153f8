package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/originserver"
	"github.com/lookahead-dev/lookahead/internal/store"
	"github.com/lookahead-dev/lookahead/internal/tracing"
)

// TestTraceFollowsAMiss: an application's traced Get that misses produces,
// in one trace, the sidecar's server span, its cache lookup, its client
// span of the origin round trip and the origin's server span.
func TestTraceFollowsAMiss(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "origin.db"), store.Config{NoSync: true})
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Load(func(emit graph.EmitFunc) error { return emit(&graph.Object{ID: "a", Version: 1, Type: "T"}) })
	require.NoError(t, err)
	osrv, err := originserver.New(st, originserver.Config{}, prometheus.NewRegistry())
	require.NoError(t, err)
	defer osrv.Shutdown()

	app, side, orig := tracetest.NewSpanRecorder(), tracetest.NewSpanRecorder(), tracetest.NewSpanRecorder()
	originTracing := tracing.NewWith("origin", orig)
	ogs := grpc.NewServer(originTracing.ServerOptions()...)
	lookaheadv1.RegisterOriginServiceServer(ogs, osrv)
	olis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = ogs.Serve(olis) }()
	defer ogs.Stop()

	o, err := parseFlags([]string{"--origin", olis.Addr().String(), "--listen", "127.0.0.1:0", "--metrics-listen", "",
		"--addr-file", filepath.Join(dir, "addrs"), "--prefetch-mode", "off", "--watch=false", "--drain-timeout", "1s"})
	require.NoError(t, err)
	o.tracer = tracing.NewWith("sidecar", side)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, o, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	defer func() { cancel(); require.NoError(t, <-done) }()
	var addr string
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(o.addrFile)
		if err != nil {
			return false
		}
		addr = strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], "grpc ")
		return true
	}, 30*time.Second, 10*time.Millisecond)

	appTracing := tracing.NewWith("app", app)
	cc, err := grpc.NewClient(addr, append(appTracing.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	require.NoError(t, err)
	defer cc.Close()
	resp, err := lookaheadv1.NewSidecarServiceClient(cc).Get(context.Background(), &lookaheadv1.GetRequest{Id: "a"})
	require.NoError(t, err)
	require.Equal(t, lookaheadv1.CacheStatus_CACHE_STATUS_MISS, resp.GetStatus())

	// A server span ends after its answer is sent: wait for them.
	require.Eventually(t, func() bool {
		return has(side, "lookahead.v1.SidecarService/Get") && has(orig, "lookahead.v1.OriginService/BatchGet")
	}, 10*time.Second, 5*time.Millisecond, "server spans end")
	appGet := only(t, app, "lookahead.v1.SidecarService/Get", trace.SpanKindClient)
	traceID := appGet.SpanContext().TraceID()
	serverGet := only(t, side, "lookahead.v1.SidecarService/Get", trace.SpanKindServer)
	lookup := only(t, side, "cache lookup", trace.SpanKindInternal)
	roundTrip := only(t, side, "lookahead.v1.OriginService/BatchGet", trace.SpanKindClient)
	originGet := only(t, orig, "lookahead.v1.OriginService/BatchGet", trace.SpanKindServer)
	for name, s := range map[string]sdktrace.ReadOnlySpan{"sidecar server": serverGet, "cache lookup": lookup, "origin round trip": roundTrip, "origin server": originGet} {
		assert.Equal(t, traceID, s.SpanContext().TraceID(), "%s span: the application's trace", name)
	}
	assert.Equal(t, appGet.SpanContext().SpanID(), serverGet.Parent().SpanID(), "the sidecar continues the application's span")
	assert.Equal(t, serverGet.SpanContext().SpanID(), lookup.Parent().SpanID())
	assert.Equal(t, lookup.SpanContext().SpanID(), roundTrip.Parent().SpanID(), "the round trip is the lookup's miss")
	assert.Equal(t, roundTrip.SpanContext().SpanID(), originGet.Parent().SpanID(), "the origin continues the sidecar's span")
}

func has(rec *tracetest.SpanRecorder, name string) bool {
	for _, s := range rec.Ended() {
		if s.Name() == name && s.SpanKind() == trace.SpanKindServer {
			return true
		}
	}
	return false
}

// only returns the one ended span of rec with name and kind.
func only(t *testing.T, rec *tracetest.SpanRecorder, name string, kind trace.SpanKind) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	var names []string
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
		if s.Name() == name && s.SpanKind() == kind {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "spans named %s of kind %v among %q", name, kind, names)
	return found[0]
}
