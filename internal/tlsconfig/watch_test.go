package tlsconfig_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"

	"github.com/lookahead-dev/lookahead/internal/tlsconfig"
	"github.com/lookahead-dev/lookahead/internal/tlsconfig/tlsconfigtest"
)

// install copies a pair's files to the paths a server or client watches,
// each replaced in one rename, as a secret mount or cert-manager does.
func install(t *testing.T, from tlsconfigtest.Pair, to tlsconfigtest.Pair) {
	t.Helper()
	copyFile(t, from.CertFile, to.CertFile)
	copyFile(t, from.KeyFile, to.KeyFile)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to+".tmp", b, 0o600))
	require.NoError(t, os.Rename(to+".tmp", to))
}

// TestWatchRotatesUnderALiveConnection rotates the server's and the client's
// certificates, then the CA both trust, while a gRPC connection made before
// stays open: every new handshake ends up presenting the new certificates
// (as the other side sees them), and the old connection keeps working.
func TestWatchRotatesUnderALiveConnection(t *testing.T) {
	dir := t.TempDir()
	ca, err := tlsconfigtest.NewCA(dir, "ca")
	require.NoError(t, err)
	next, err := tlsconfigtest.NewCA(dir, "next")
	require.NoError(t, err)
	issue := func(ca *tlsconfigtest.CA, name string, hosts ...string) tlsconfigtest.Pair {
		p, err := ca.Issue(name, hosts...)
		require.NoError(t, err)
		return p
	}
	serverA, serverB := issue(ca, "server-a", "127.0.0.1"), issue(ca, "server-b", "127.0.0.1")
	clientA, clientB := issue(ca, "client-a"), issue(ca, "client-b")
	serverC, clientC := issue(next, "server-c", "127.0.0.1"), issue(next, "client-c")

	// The watched paths.
	srvFiles := tlsconfigtest.Pair{CertFile: filepath.Join(dir, "srv.pem"), KeyFile: filepath.Join(dir, "srv-key.pem")}
	cliFiles := tlsconfigtest.Pair{CertFile: filepath.Join(dir, "cli.pem"), KeyFile: filepath.Join(dir, "cli-key.pem")}
	caFile := filepath.Join(dir, "trusted-ca.pem")
	install(t, serverA, srvFiles)
	install(t, clientA, cliFiles)
	copyFile(t, ca.CertFile, caFile)

	const refresh = 20 * time.Millisecond
	srv, err := tlsconfig.Server{CertFile: srvFiles.CertFile, KeyFile: srvFiles.KeyFile, ClientCAFile: caFile}.Watch(refresh)
	require.NoError(t, err)
	defer srv.Close()
	cli, err := tlsconfig.Client{CAFile: caFile, CertFile: cliFiles.CertFile, KeyFile: cliFiles.KeyFile}.Watch(refresh)
	require.NoError(t, err)
	defer cli.Close()

	// The server notes the client certificate of each call.
	var mu sync.Mutex
	var clientSeen string
	gs := grpc.NewServer(grpc.Creds(credentials.NewTLS(srv.Config)), grpc.UnaryInterceptor(
		func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if p, ok := peer.FromContext(ctx); ok {
				mu.Lock()
				clientSeen = p.AuthInfo.(credentials.TLSInfo).State.PeerCertificates[0].Subject.CommonName
				mu.Unlock()
			}
			return h(ctx, req)
		}))
	healthpb.RegisterHealthServer(gs, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()

	ctx := context.Background()
	// check makes one call on conn and returns the names of the server's
	// certificate (as the client saw it) and the client's (as the server did).
	check := func(conn *grpc.ClientConn) (server, client string, err error) {
		var p peer.Peer
		if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Peer(&p)); err != nil {
			return "", "", err
		}
		mu.Lock()
		defer mu.Unlock()
		return p.AuthInfo.(credentials.TLSInfo).State.PeerCertificates[0].Subject.CommonName, clientSeen, nil
	}
	dial := func() *grpc.ClientConn {
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(cli.Config)))
		require.NoError(t, err)
		return conn
	}
	// newHandshake dials a fresh connection and checks once.
	newHandshake := func() (string, string, error) {
		conn := dial()
		defer conn.Close()
		return check(conn)
	}

	live := dial()
	defer live.Close()
	s, c, err := check(live)
	require.NoError(t, err)
	assert.Equal(t, [2]string{"server-a", "client-a"}, [2]string{s, c})

	for _, step := range []struct {
		name           string
		rotate         func()
		server, client string
	}{
		{"new certificates from the same CA", func() {
			install(t, serverB, srvFiles)
			install(t, clientB, cliFiles)
		}, "server-b", "client-b"},
		{"a new CA, trusted by both sides", func() {
			// Both sides trust both CAs while the certificates change.
			both, err := os.ReadFile(ca.CertFile)
			require.NoError(t, err)
			nb, err := os.ReadFile(next.CertFile)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(caFile+".tmp", append(both, nb...), 0o600))
			require.NoError(t, os.Rename(caFile+".tmp", caFile))
			install(t, serverC, srvFiles)
			install(t, clientC, cliFiles)
		}, "server-c", "client-c"},
	} {
		t.Run(step.name, func(t *testing.T) {
			step.rotate()
			require.Eventually(t, func() bool {
				s, c, err := newHandshake()
				return err == nil && s == step.server && c == step.client
			}, 10*time.Second, 10*time.Millisecond, "new handshakes present %s and %s", step.server, step.client)
			_, _, err := check(live)
			assert.NoError(t, err, "the connection made before the rotation still works")
		})
	}

	t.Run("a CA no longer trusted is refused", func(t *testing.T) {
		copyFile(t, next.CertFile, caFile) // only the new CA
		install(t, serverB, srvFiles)      // a certificate of the old one
		require.Eventually(t, func() bool {
			_, _, err := newHandshake()
			return err != nil
		}, 10*time.Second, 10*time.Millisecond, "the client stops trusting the old CA")
	})
}

func TestWatchZeroValueIsPlaintext(t *testing.T) {
	s, err := tlsconfig.Server{}.Watch(0)
	require.NoError(t, err)
	assert.Nil(t, s)
	c, err := tlsconfig.Client{}.Watch(0)
	require.NoError(t, err)
	assert.Nil(t, c)
	s.Close() // a nil Watched closes
}
