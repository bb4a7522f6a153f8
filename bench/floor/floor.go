// Package floor is the bare grpc-go server that W3 measures the sidecar's
// hit path against: the sidecar's Get method shape, answered from a Go map.
package floor

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
)

// Command is the first argument that makes a benchmark binary run Main.
const Command = "floor-server"

// Server answers Get from objects, which never change after New.
type Server struct {
	lookaheadv1.UnimplementedSidecarServiceServer
	objects map[string]*lookaheadv1.Object
}

// New holds every object g generates, converted to the wire form once.
func New(g graph.TaskTrees) (*Server, error) {
	s := &Server{objects: make(map[string]*lookaheadv1.Object)}
	err := g.Generate(func(o *graph.Object) error {
		s.objects[o.ID] = graphpb.ToProto(o)
		return nil
	})
	return s, err
}

// Get implements lookaheadv1.SidecarServiceServer.
func (s *Server) Get(_ context.Context, req *lookaheadv1.GetRequest) (*lookaheadv1.GetResponse, error) {
	o, ok := s.objects[req.GetId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "object %q not found", req.GetId())
	}
	return &lookaheadv1.GetResponse{Object: o, Status: lookaheadv1.CacheStatus_CACHE_STATUS_HIT}, nil
}

// Main runs the server from command-line args until SIGTERM or SIGINT and
// returns the exit code. It writes "grpc ADDR" to -addr-file once serving,
// as the origin and sidecar do, so internal/launch can start it.
func Main(args []string) int {
	fs := flag.NewFlagSet(Command, flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "gRPC listen address")
	addrFile := fs.String("addr-file", "", "write the bound address to this file")
	var g graph.TaskTrees
	fs.IntVar(&g.Roots, "task-roots", 1, "task trees")
	fs.IntVar(&g.Fanout, "task-fanout", 5, "subtasks per task")
	fs.IntVar(&g.Levels, "task-levels", 5, "levels per tree")
	fs.IntVar(&g.PayloadBytes, "payload-bytes", 1024, "payload bytes per object")
	fs.Uint64Var(&g.Seed, "dataset-seed", 1, "seed of the payloads, as the origin's")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := serve(*listen, *addrFile, g); err != nil {
		fmt.Fprintln(os.Stderr, Command+":", err)
		return 1
	}
	return 0
}

func serve(listen, addrFile string, g graph.TaskTrees) error {
	srv, err := New(g)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	gs := grpc.NewServer()
	lookaheadv1.RegisterSidecarServiceServer(gs, srv)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- gs.Serve(l) }()
	if addrFile != "" {
		tmp := addrFile + ".tmp"
		if err := os.WriteFile(tmp, []byte("grpc "+l.Addr().String()+"\n"), 0o644); err != nil {
			gs.Stop()
			return err
		}
		if err := os.Rename(tmp, addrFile); err != nil {
			gs.Stop()
			return err
		}
	}
	select {
	case <-ctx.Done():
	case err := <-served:
		return err
	}
	stopped := make(chan struct{})
	go func() { gs.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		gs.Stop()
	}
	return nil
}
