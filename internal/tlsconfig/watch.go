package tlsconfig

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/credentials/tls/certprovider"
	"google.golang.org/grpc/credentials/tls/certprovider/pemfile"
)

// DefaultRefresh is how often Watch re-reads the files by default.
const DefaultRefresh = 30 * time.Second

// keyMaterialWait bounds how long a handshake waits for the files' first
// reading; Watch's callers checked the files with Load, so it is quick.
const keyMaterialWait = 10 * time.Second

// Watched is a TLS configuration whose certificate, key and CAs are re-read
// from their files every refresh period (grpc-go's pemfile provider), so a
// rotated certificate is used from the next handshake on, without a restart;
// connections already established keep theirs. A file that is missing or
// does not parse at a reading is skipped: the last good one stays in use.
type Watched struct {
	Config    *tls.Config
	providers []certprovider.Provider
}

// Close stops re-reading the files. A nil Watched is plaintext: nothing to
// close.
func (w *Watched) Close() {
	if w == nil {
		return
	}
	for _, p := range w.providers {
		p.Close()
	}
}

func (w *Watched) provider(o pemfile.Options) (certprovider.Provider, error) {
	p, err := pemfile.NewProvider(o)
	if err != nil {
		return nil, fmt.Errorf("tlsconfig: watching %s%s: %w", o.CertFile, o.RootFile, err)
	}
	w.providers = append(w.providers, p)
	return p, nil
}

// Watch is Load with reloading: nil, nil for the zero value. Call Load
// first to report broken files before anything starts; refresh 0 means
// DefaultRefresh.
func (s Server) Watch(refresh time.Duration) (*Watched, error) {
	if !s.Enabled() {
		return nil, nil
	}
	if s.CertFile == "" || s.KeyFile == "" {
		return nil, errors.New("tlsconfig: server certificate and key must be given together")
	}
	refresh = cmpOr(refresh, DefaultRefresh)
	w := &Watched{}
	id, err := w.provider(pemfile.Options{CertFile: s.CertFile, KeyFile: s.KeyFile, RefreshDuration: refresh})
	if err != nil {
		return nil, err
	}
	var roots certprovider.Provider
	if s.ClientCAFile != "" {
		if roots, err = w.provider(pemfile.Options{RootFile: s.ClientCAFile, RefreshDuration: refresh}); err != nil {
			w.Close()
			return nil, err
		}
	}
	// Each handshake gets a configuration from the files' latest reading;
	// crypto/tls verifies client certificates against it as usual.
	w.Config = &tls.Config{MinVersion: tls.VersionTLS12, GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		ctx, cancel := context.WithTimeout(hello.Context(), keyMaterialWait)
		defer cancel()
		km, err := id.KeyMaterial(ctx)
		if err != nil {
			return nil, fmt.Errorf("tlsconfig: server certificate: %w", err)
		}
		// NextProtos again: gRPC sets h2 on the configuration it was given,
		// not on the one returned here.
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: km.Certs, NextProtos: []string{"h2"}}
		if roots != nil {
			rm, err := roots.KeyMaterial(ctx)
			if err != nil {
				return nil, fmt.Errorf("tlsconfig: client CA: %w", err)
			}
			cfg.ClientCAs, cfg.ClientAuth = rm.Roots, tls.RequireAndVerifyClientCert
		}
		return cfg, nil
	}}
	return w, nil
}

// Watch is Load with reloading: nil, nil for the zero value. Call Load
// first to report broken files before anything starts; refresh 0 means
// DefaultRefresh.
func (c Client) Watch(refresh time.Duration) (*Watched, error) {
	if !c.Enabled() {
		return nil, nil
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, errors.New("tlsconfig: client certificate and key must be given together")
	}
	refresh = cmpOr(refresh, DefaultRefresh)
	w := &Watched{Config: &tls.Config{ServerName: c.ServerName, MinVersion: tls.VersionTLS12}}
	if c.CertFile != "" {
		id, err := w.provider(pemfile.Options{CertFile: c.CertFile, KeyFile: c.KeyFile, RefreshDuration: refresh})
		if err != nil {
			return nil, err
		}
		w.Config.GetClientCertificate = func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
			ctx, cancel := context.WithTimeout(cri.Context(), keyMaterialWait)
			defer cancel()
			km, err := id.KeyMaterial(ctx)
			if err != nil {
				return nil, fmt.Errorf("tlsconfig: client certificate: %w", err)
			}
			return &km.Certs[0], nil
		}
	}
	if c.CAFile != "" {
		roots, err := w.provider(pemfile.Options{RootFile: c.CAFile, RefreshDuration: refresh})
		if err != nil {
			w.Close()
			return nil, err
		}
		// A client configuration has no per-handshake hook for its roots:
		// crypto/tls's documented way is to skip its own check and verify
		// the chain and name in VerifyConnection, with the latest roots.
		w.Config.InsecureSkipVerify = true
		w.Config.VerifyConnection = func(cs tls.ConnectionState) error {
			ctx, cancel := context.WithTimeout(context.Background(), keyMaterialWait)
			defer cancel()
			km, err := roots.KeyMaterial(ctx)
			if err != nil {
				return fmt.Errorf("tlsconfig: CA: %w", err)
			}
			return verifyServer(cs, km.Roots)
		}
	}
	return w, nil
}

// verifyServer is crypto/tls's own check of a server's chain and name,
// against roots.
func verifyServer(cs tls.ConnectionState, roots *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tlsconfig: the server sent no certificate")
	}
	opts := x509.VerifyOptions{DNSName: cs.ServerName, Roots: roots, Intermediates: x509.NewCertPool()}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(opts)
	return err
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
