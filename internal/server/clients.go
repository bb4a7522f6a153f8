package server

import (
	"net"
	"sync/atomic"

	"google.golang.org/grpc/credentials"

	"github.com/lookahead-dev/lookahead/internal/prefetch"
)

// Credentials are base (the server's TLS, or insecure.NewCredentials() for
// plaintext) giving each client connection its own share of speculation:
// its requests carry a prefetch.Client, and when the connection ends the
// scheduler drops what was queued for it and cuts what runs (see
// prefetch.Client for why the connection is the scope). Install them with
// grpc.Creds on the grpc.Server that serves s.
//
// The connection, not a gRPC stats handler, carries the Client: once a
// server has a stats handler, gRPC builds an event for every step of every
// RPC and hands it over (17 allocations per hit, BenchmarkHitRPC), where
// the Client needs only the connection's start and end. The handshake
// wraps the connection: a request finds the Client through its remote
// address, which gRPC puts in every request's peer (prefetch.ClientOf),
// and its Close, which gRPC calls once it is done with the connection,
// tells the scheduler. gRPC keeps the connection it accepted, unwrapped,
// for what it sets on the socket (TCP_USER_TIMEOUT).
func (s *Server) Credentials(base credentials.TransportCredentials) credentials.TransportCredentials {
	return clientCredentials{TransportCredentials: base, sched: s.sched}
}

// clientCredentials make every connection whose handshake they complete a
// Client.
type clientCredentials struct {
	credentials.TransportCredentials
	sched Scheduler
}

func (c clientCredentials) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		return nil, nil, err
	}
	addr := prefetch.ClientAddr{Addr: conn.RemoteAddr(), Client: prefetch.NewClient()}
	return &clientConn{Conn: conn, addr: addr, sched: c.sched}, info, nil
}

func (c clientCredentials) Clone() credentials.TransportCredentials {
	return clientCredentials{TransportCredentials: c.TransportCredentials.Clone(), sched: c.sched}
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
