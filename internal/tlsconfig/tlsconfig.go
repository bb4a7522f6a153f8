// Package tlsconfig builds the TLS settings of lookahead's listeners and
// origin connections from PEM files.
package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// Server names the files of a TLS listener. The zero value is plaintext.
type Server struct {
	CertFile, KeyFile string // the server's certificate chain and key, PEM
	// ClientCAFile, when set, turns on mutual TLS: a client must present a
	// certificate signed by one of these CAs, or the handshake fails.
	ClientCAFile string
}

// Enabled reports whether any file is set.
func (s Server) Enabled() bool { return s.CertFile != "" || s.KeyFile != "" || s.ClientCAFile != "" }

// Load reads the files into a *tls.Config; nil, nil when s is the zero
// value. The certificate and key must come together; a client CA needs
// them.
func (s Server) Load() (*tls.Config, error) {
	if !s.Enabled() {
		return nil, nil
	}
	if s.CertFile == "" || s.KeyFile == "" {
		return nil, errors.New("tlsconfig: server certificate and key must be given together")
	}
	cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tlsconfig: server key pair: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if s.ClientCAFile != "" {
		pool, err := loadPool(s.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("tlsconfig: client CA: %w", err)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// Client names the files of a TLS connection. The zero value is plaintext.
type Client struct {
	// CAFile holds the CAs that may sign the server's certificate; empty =
	// the system's roots.
	CAFile string
	// CertFile and KeyFile are the client's certificate, for a server that
	// requires mutual TLS; both or neither.
	CertFile, KeyFile string
	// ServerName is the name the server's certificate must carry; empty =
	// the host of the address dialed.
	ServerName string
}

// Enabled reports whether any setting is made.
func (c Client) Enabled() bool {
	return c.CAFile != "" || c.CertFile != "" || c.KeyFile != "" || c.ServerName != ""
}

// Load reads the files into a *tls.Config; nil, nil when c is the zero
// value.
func (c Client) Load() (*tls.Config, error) {
	if !c.Enabled() {
		return nil, nil
	}
	cfg := &tls.Config{ServerName: c.ServerName, MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		pool, err := loadPool(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tlsconfig: CA: %w", err)
		}
		cfg.RootCAs = pool
	}
	switch {
	case c.CertFile != "" && c.KeyFile != "":
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tlsconfig: client key pair: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	case c.CertFile != "" || c.KeyFile != "":
		return nil, errors.New("tlsconfig: client certificate and key must be given together")
	}
	return cfg, nil
}

func loadPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificate", path)
	}
	return pool, nil
}
