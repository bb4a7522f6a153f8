package tlsconfig_test

import (
	"crypto/tls"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lookahead-dev/lookahead/internal/tlsconfig"
	"github.com/lookahead-dev/lookahead/internal/tlsconfig/tlsconfigtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pki is two unrelated CAs, a server certificate for 127.0.0.1 and
// localhost, and client certificates from each CA.
type pki struct {
	ca, other       *tlsconfigtest.CA
	server, client  tlsconfigtest.Pair
	strangerClient  tlsconfigtest.Pair // signed by other
	strangerServer  tlsconfigtest.Pair // signed by other
	wrongNameServer tlsconfigtest.Pair // signed by ca, for another host
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	dir := t.TempDir()
	var p pki
	var err error
	p.ca, err = tlsconfigtest.NewCA(dir, "ca")
	require.NoError(t, err)
	p.other, err = tlsconfigtest.NewCA(dir, "other")
	require.NoError(t, err)
	for _, c := range []struct {
		pair  *tlsconfigtest.Pair
		ca    *tlsconfigtest.CA
		name  string
		hosts []string
	}{
		{&p.server, p.ca, "server", []string{"127.0.0.1", "localhost"}},
		{&p.client, p.ca, "client", nil},
		{&p.strangerClient, p.other, "client", nil},
		{&p.strangerServer, p.other, "server", []string{"127.0.0.1"}},
		{&p.wrongNameServer, p.ca, "elsewhere", []string{"elsewhere.example"}},
	} {
		*c.pair, err = c.ca.Issue(c.name, c.hosts...)
		require.NoError(t, err)
	}
	return &p
}

// handshake serves one TLS connection with srv and dials it with cli; it
// returns the server's and the client's errors (nil = the client read the
// server's greeting).
func handshake(t *testing.T, srv, cli *tls.Config) (serverErr, clientErr error) {
	t.Helper()
	lis, err := tls.Listen("tcp", "127.0.0.1:0", srv)
	require.NoError(t, err)
	defer lis.Close()
	done := make(chan error, 1)
	go func() {
		conn, err := lis.Accept()
		if err != nil {
			done <- err
			return
		}
		defer conn.Close()
		if err := conn.(*tls.Conn).Handshake(); err != nil {
			done <- err
			return
		}
		_, err = conn.Write([]byte("ok"))
		done <- err
	}()
	conn, err := tls.Dial("tcp", lis.Addr().String(), cli)
	if err == nil {
		// With TLS 1.3 the server's verdict on a client certificate
		// arrives after the client's handshake: read to hear it.
		buf := make([]byte, 2)
		_, err = io.ReadFull(conn, buf)
		conn.Close()
	} else {
		lis.Close() // the server may be waiting in Accept for nothing
	}
	return <-done, err
}

func TestHandshakes(t *testing.T) {
	p := newPKI(t)
	tests := []struct {
		name          string
		server        tlsconfig.Server
		client        tlsconfig.Client
		wantClientErr string // "" = the connection works
		wantServerErr string
	}{
		{name: "TLS with the server's CA",
			server: tlsconfig.Server{CertFile: p.server.CertFile, KeyFile: p.server.KeyFile},
			client: tlsconfig.Client{CAFile: p.ca.CertFile}},
		{name: "TLS by name (localhost SAN)",
			server: tlsconfig.Server{CertFile: p.server.CertFile, KeyFile: p.server.KeyFile},
			client: tlsconfig.Client{CAFile: p.ca.CertFile, ServerName: "localhost"}},
		{name: "wrong CA: the client refuses the server",
			server:        tlsconfig.Server{CertFile: p.server.CertFile, KeyFile: p.server.KeyFile},
			client:        tlsconfig.Client{CAFile: p.other.CertFile},
			wantClientErr: "certificate signed by unknown authority", wantServerErr: "bad certificate"},
		{name: "a server certificate from another CA is refused",
			server:        tlsconfig.Server{CertFile: p.strangerServer.CertFile, KeyFile: p.strangerServer.KeyFile},
			client:        tlsconfig.Client{CAFile: p.ca.CertFile},
			wantClientErr: "certificate signed by unknown authority", wantServerErr: "bad certificate"},
		{name: "a certificate for another name is refused",
			server:        tlsconfig.Server{CertFile: p.wrongNameServer.CertFile, KeyFile: p.wrongNameServer.KeyFile},
			client:        tlsconfig.Client{CAFile: p.ca.CertFile},
			wantClientErr: "cannot validate certificate for 127.0.0.1 because it doesn't contain any IP SANs", wantServerErr: "bad certificate"},
		{name: "the server name setting selects the name to verify",
			server: tlsconfig.Server{CertFile: p.wrongNameServer.CertFile, KeyFile: p.wrongNameServer.KeyFile},
			client: tlsconfig.Client{CAFile: p.ca.CertFile, ServerName: "elsewhere.example"}},
		{name: "mTLS with a client certificate",
			server: tlsconfig.Server{CertFile: p.server.CertFile, KeyFile: p.server.KeyFile, ClientCAFile: p.ca.CertFile},
			client: tlsconfig.Client{CAFile: p.ca.CertFile, CertFile: p.client.CertFile, KeyFile: p.client.KeyFile}},
		{name: "mTLS rejects a client without a certificate",
			server:        tlsconfig.Server{CertFile: p.server.CertFile, KeyFile: p.server.KeyFile, ClientCAFile: p.ca.CertFile},
			client:        tlsconfig.Client{CAFile: p.ca.CertFile},
			wantClientErr: "certificate required", wantServerErr: "client didn't provide a certificate"},
		// Go's client does not even offer a certificate that no CA the
		// server names has signed; the server then has none to accept.
		{name: "mTLS rejects a client certificate from another CA",
			server:        tlsconfig.Server{CertFile: p.server.CertFile, KeyFile: p.server.KeyFile, ClientCAFile: p.ca.CertFile},
			client:        tlsconfig.Client{CAFile: p.ca.CertFile, CertFile: p.strangerClient.CertFile, KeyFile: p.strangerClient.KeyFile},
			wantClientErr: "certificate required", wantServerErr: "client didn't provide a certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := tt.server.Load()
			require.NoError(t, err)
			cli, err := tt.client.Load()
			require.NoError(t, err)
			serverErr, clientErr := handshake(t, srv, cli)
			if tt.wantClientErr == "" {
				assert.NoError(t, clientErr)
				assert.NoError(t, serverErr)
				return
			}
			assert.ErrorContains(t, clientErr, tt.wantClientErr)
			assert.ErrorContains(t, serverErr, tt.wantServerErr)
		})
	}
}

func TestLoadErrors(t *testing.T) {
	p := newPKI(t)
	notPEM := filepath.Join(t.TempDir(), "junk.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate"), 0o600))
	tests := []struct {
		name    string
		load    func() (*tls.Config, error)
		wantErr string
	}{
		{"server cert without key", tlsconfig.Server{CertFile: p.server.CertFile}.Load, "server certificate and key must be given together"},
		{"server client CA without a cert", tlsconfig.Server{ClientCAFile: p.ca.CertFile}.Load, "server certificate and key must be given together"},
		{"server key file missing", tlsconfig.Server{CertFile: p.server.CertFile, KeyFile: "/nonexistent/key.pem"}.Load, "server key pair: open /nonexistent/key.pem"},
		{"server key does not match", tlsconfig.Server{CertFile: p.server.CertFile, KeyFile: p.client.KeyFile}.Load, "server key pair: tls: private key does not match public key"},
		{"client CA not PEM", tlsconfig.Server{CertFile: p.server.CertFile, KeyFile: p.server.KeyFile, ClientCAFile: notPEM}.Load, "client CA: " + notPEM + ": no PEM certificate"},
		{"client key without cert", tlsconfig.Client{KeyFile: p.client.KeyFile}.Load, "client certificate and key must be given together"},
		{"client CA missing", tlsconfig.Client{CAFile: "/nonexistent/ca.pem"}.Load, "CA: open /nonexistent/ca.pem"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := tt.load()
			assert.Nil(t, cfg)
			assert.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestZeroValuesArePlaintext(t *testing.T) {
	s, err := tlsconfig.Server{}.Load()
	assert.NoError(t, err)
	assert.Nil(t, s)
	c, err := tlsconfig.Client{}.Load()
	assert.NoError(t, err)
	assert.Nil(t, c)
}

func TestClientWithSystemRoots(t *testing.T) {
	cfg, err := tlsconfig.Client{ServerName: "origin.example"}.Load()
	require.NoError(t, err)
	assert.Nil(t, cfg.RootCAs, "no CA file: the system's roots")
	assert.Equal(t, "origin.example", cfg.ServerName)
}

// TestMTLSVerifiesAnOfferedCertificate makes the client offer a certificate
// from another CA anyway, as a client other than Go's may: the server's
// verification refuses it.
func TestMTLSVerifiesAnOfferedCertificate(t *testing.T) {
	p := newPKI(t)
	srv, err := tlsconfig.Server{CertFile: p.server.CertFile, KeyFile: p.server.KeyFile, ClientCAFile: p.ca.CertFile}.Load()
	require.NoError(t, err)
	cli, err := tlsconfig.Client{CAFile: p.ca.CertFile}.Load()
	require.NoError(t, err)
	stranger, err := tls.LoadX509KeyPair(p.strangerClient.CertFile, p.strangerClient.KeyFile)
	require.NoError(t, err)
	cli.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &stranger, nil }
	serverErr, clientErr := handshake(t, srv, cli)
	assert.ErrorContains(t, serverErr, "certificate signed by unknown authority")
	assert.ErrorContains(t, clientErr, "unknown certificate authority")
}
