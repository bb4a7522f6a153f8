package server

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"

	"github.com/lookahead-dev/lookahead/internal/prefetch"
)

// ServerOptions give each client connection its own share of speculation:
// its requests carry a prefetch.Client, and when the connection ends the
// scheduler drops what was queued for it and cuts what runs (see
// prefetch.Client for why the connection is the scope). Install them on the
// grpc.Server that serves s.
func (s *Server) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.StatsHandler(clients{s.sched})}
}

// clients is the stats handler that tags connections with their Client.
type clients struct{ sched Scheduler }

// TagConn gives a new connection its Client: every request on it sees it in
// its context.
func (clients) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return prefetch.WithClient(ctx, prefetch.NewClient())
}

// HandleConn tells the scheduler that a connection's client has gone.
func (h clients) HandleConn(ctx context.Context, st stats.ConnStats) {
	if _, end := st.(*stats.ConnEnd); end {
		if c := prefetch.ClientOf(ctx); c != nil {
			h.sched.Gone(c)
		}
	}
}

func (clients) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (clients) HandleRPC(context.Context, stats.RPCStats) {}
