package server

import (
	"net"
	"sync/atomic"

	"github.com/lookahead-dev/lookahead/internal/prefetch"
)

// Listener gives each client connection l accepts its own share of
// speculation: its requests carry a prefetch.Client, and when the
// connection ends the scheduler drops what was queued for it and cuts what
// runs (see prefetch.Client for why the connection is the scope). Serve
// the grpc.Server that serves s on it.
//
// The connection, not a gRPC stats handler, carries the Client: once a
// server has a stats handler, gRPC builds an event for every step of every
// RPC and hands it over (17 allocations per hit, BenchmarkHitRPC), where
// the Client needs only the connection's start and end. A request finds
// it through the connection's remote address, which gRPC puts in every
// request's peer (prefetch.ClientOf); the connection's Close, which gRPC
// calls once it is done with the connection, tells the scheduler. The
// wrapper hides the *net.TCPConn from gRPC, which looks for it only to set
// a keepalive's TCP_USER_TIMEOUT: the sidecar sets no keepalive.
func (s *Server) Listener(l net.Listener) net.Listener {
	return clientListener{Listener: l, sched: s.sched}
}

// clientListener makes every connection it accepts a Client.
type clientListener struct {
	net.Listener
	sched Scheduler
}

func (l clientListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	addr := prefetch.ClientAddr{Addr: c.RemoteAddr(), Client: prefetch.NewClient()}
	return &clientConn{Conn: c, addr: addr, sched: l.sched}, nil
}

// clientConn is a connection that is a Client until it closes.
type clientConn struct {
	net.Conn
	addr   prefetch.ClientAddr
	sched  Scheduler
	closed atomic.Bool
}

// RemoteAddr names the connection's Client.
func (c *clientConn) RemoteAddr() net.Addr { return c.addr }

// Close tells the scheduler, once, that the connection's client has gone.
func (c *clientConn) Close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.sched.Gone(c.addr.Client)
	}
	return err
}
