package prefetch

import (
	"context"
	"net"
	"sync/atomic"

	"google.golang.org/grpc/peer"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// A Client is one connection of an application: the speculation its
// requests schedule is for it, and stops when it goes (Scheduler.Gone).
//
// Why a connection, not a request or a stream: speculation starts after the
// request that schedules it has been answered (a demand never waits for
// it), so a unary Get is always gone before its speculation runs, and
// scoping speculation to it would cancel all of it. The application's next
// request, the one speculation is for, comes on the same connection (a
// gRPC client multiplexes its calls over one); while the connection is
// open the application may still read what its jobs fetch, and once it is
// closed nothing it scheduled is read by it. Another client reading the
// same objects schedules jobs of its own, and a demand of anyone that has
// joined a speculative call in flight keeps that call (see
// fetch.Abandonable).
type Client struct {
	gone atomic.Bool
}

// NewClient returns the Client of a new connection.
func NewClient() *Client { return &Client{} }

// ClientAddr is the remote address of a connection that is a Client: the
// server's handshake gives each connection it makes a Client this address
// (server.Server.Credentials), and gRPC hands it to each of its requests
// in their peer, where ClientOf finds it at no cost to the request.
type ClientAddr struct {
	net.Addr
	Client *Client
}

// ClientOf returns the Client of the gRPC connection ctx is a request of,
// nil if its remote address is not a ClientAddr.
func ClientOf(ctx context.Context) *Client {
	if p, ok := peer.FromContext(ctx); ok {
		if a, ok := p.Addr.(ClientAddr); ok {
			return a.Client
		}
	}
	return nil
}

// goneFor reports whether j was scheduled for a client that has gone.
func (j *job) goneFor() bool { return j.client != nil && j.client.gone.Load() }

// Gone is told that c's connection has ended: its queued jobs are dropped
// and its running ones cancelled, their origin calls cut except those a
// demand has joined, which the demand waits for. Counted by
// Metrics.ClientGone. A job of c scheduled after this is dropped at once
// (enqueue); one already on its way into the queue, when a worker pops it.
func (s *Scheduler) Gone(c *Client) {
	c.gone.Store(true) // first: whatever is queued or popped from now on sees it
	var held []*graph.Object
	dropped := s.jobs.filter(func(j *job) bool {
		if j.client != c {
			return true
		}
		held = append(held, j.triggers...)
		return false
	})
	s.mu.Lock()
	for r := range s.runs {
		if r.client == c {
			r.abandon()
			r.cancel()
			delete(s.runs, r) // counted once; its triggers are released as it ends
			dropped++
		}
	}
	s.mu.Unlock()
	s.index.release(held)
	for range dropped {
		s.cfg.Metrics.ClientGone()
	}
}
