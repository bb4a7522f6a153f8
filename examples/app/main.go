// Command app is the example application of deploy/k8s: an HTTP service
// that reads object graphs through the lookahead sidecar in its pod.
//
//	GET /graph?root=task-0&depth=2   the subgraph below root, one object per line
//	GET /healthz                     200 once started
//
// It listens on :8080 and reaches the sidecar at $CACHE_ADDR
// (127.0.0.1:7070 by default).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

func main() {
	addr := os.Getenv("CACHE_ADDR")
	if addr == "" {
		addr = "127.0.0.1:7070"
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatalf("sidecar %s: %v", addr, err)
	}
	defer conn.Close()
	sidecar := lookaheadv1.NewSidecarServiceClient(conn)

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /graph", func(w http.ResponseWriter, r *http.Request) { graph(w, r, sidecar) })
	srv := &http.Server{Addr: ":8080", Handler: mux, ReadHeaderTimeout: 5 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

// graph streams GetGraph of ?root= (?depth=, default 2) as text lines.
func graph(w http.ResponseWriter, r *http.Request, sidecar lookaheadv1.SidecarServiceClient) {
	root := r.URL.Query().Get("root")
	if root == "" {
		http.Error(w, "root: missing", http.StatusBadRequest)
		return
	}
	depth := uint32(2)
	if d := r.URL.Query().Get("depth"); d != "" {
		n, err := strconv.ParseUint(d, 10, 8)
		if err != nil {
			http.Error(w, "depth: "+err.Error(), http.StatusBadRequest)
			return
		}
		depth = uint32(n)
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	stream, err := sidecar.GetGraph(ctx, &lookaheadv1.GetGraphRequest{Roots: []string{root}, Depth: &depth})
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			fmt.Fprintf(w, "error: %v\n", err)
			return
		}
		for _, res := range resp.GetResults() {
			fmt.Fprintf(w, "%d %s %s\n", res.GetLevel(), res.GetObject().GetId(), res.GetStatus())
		}
		for _, id := range resp.GetMissingIds() {
			fmt.Fprintf(w, "missing %s\n", id)
		}
	}
}
