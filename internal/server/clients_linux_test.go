//go:build linux

package server

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// gRPC sets its keepalive timeout as TCP_USER_TIMEOUT on each TCP
// connection it serves, so that the kernel gives up on a peer that stopped
// acknowledging; the credentials that make a connection a Client wrap it
// only after, and it still does. (A listener that wrapped connections as
// it accepted them hid them from gRPC, which then set nothing.)
func TestClientConnectionsKeepTheirTCPUserTimeout(t *testing.T) {
	r := newRig(t, taskTree(t, 1, 2, 2), rigOptions{engine: modeOff})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	accepted := make(chan *net.TCPConn, 1)
	gs := grpc.NewServer(grpc.Creds(r.svc.Credentials(insecure.NewCredentials())),
		grpc.KeepaliveParams(keepalive.ServerParameters{Timeout: 7 * time.Second}))
	lookaheadv1.RegisterSidecarServiceServer(gs, r.svc)
	go func() { _ = gs.Serve(recordingListener{lis, accepted}) }()
	t.Cleanup(gs.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { cc.Close() })
	_, err = lookaheadv1.NewSidecarServiceClient(cc).Get(context.Background(), &lookaheadv1.GetRequest{Id: "task-0"})
	require.NoError(t, err)

	raw, err := (<-accepted).SyscallConn()
	require.NoError(t, err)
	var ms int
	require.NoError(t, raw.Control(func(fd uintptr) {
		ms, err = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
	}))
	require.NoError(t, err)
	assert.Equal(t, 7000, ms)
}

// recordingListener hands the first TCP connection it accepts to accepted,
// and gRPC the connection itself.
type recordingListener struct {
	net.Listener
	accepted chan<- *net.TCPConn
}

func (l recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		select {
		case l.accepted <- tc:
		default:
		}
	}
	return c, err
}
