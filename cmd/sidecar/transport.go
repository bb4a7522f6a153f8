package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"time"

	"golang.org/x/net/netutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"

	"github.com/lookahead-dev/lookahead/internal/flagconf"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/tlsconfig"
)

// defaultMaxStreams is --max-concurrent-streams' default. Without a limit,
// one connection's thousands of concurrent misses are as many runnable
// handlers that keep the cores busy, and a hit on another connection waits
// for one (BenchmarkHitDuringFlood in internal/server, and
// docs/benchmark-history.md, "Hardening: a hit during a flood"); 256
// requests in progress still keep a connection's misses flowing through
// every demand batch.
const defaultMaxStreams = 256

// defaultMaxConns is --max-connections' default. The applications of one
// pod open a connection or a few each; a thousand leaves room for many
// processes and short-lived clients while bounding what a runaway or
// hostile one that opens connections in a loop can make the sidecar hold.
const defaultMaxConns = 1024

// limitListener bounds the connections l keeps open at once to
// --max-connections.
func (t *transportOptions) limitListener(l net.Listener) net.Listener {
	if t.maxConns == 0 {
		return l
	}
	return netutil.LimitListener(l, t.maxConns)
}

// transportOptions are the settings of the origin connection (retries,
// breaker, reply and message limits, TLS) and of the sidecar's listener
// (message and stream limits, TLS).
type transportOptions struct {
	client          origin.Config
	maxObjectBytes  int64
	maxMessageBytes int64
	maxStreams      int // per client connection; 0 = no limit
	maxConns        int // client connections open at once, per listener; 0 = no limit
	// keepaliveTime and keepaliveTimeout: a client connection silent for
	// keepaliveTime is pinged, and cut when it does not answer within
	// keepaliveTimeout.
	keepaliveTime, keepaliveTimeout time.Duration
	// originKeepaliveTime and originKeepaliveTimeout: the same for the
	// origin connection, while a call to it is open (origin.DialConfig).
	originKeepaliveTime, originKeepaliveTimeout time.Duration
	serverFiles                                 tlsconfig.Server
	originFiles                                 tlsconfig.Client

	serverTLS, originTLS *tls.Config       // loaded by finish; nil = plaintext
	dialOptions          []grpc.DialOption // added to the origin connections' own (tracing's)
}

func (t *transportOptions) register(fs *flag.FlagSet) {
	fs.IntVar(&t.client.Retries, "origin-retries", origin.DefaultRetries, "retries of an origin read answered UNAVAILABLE, with jittered exponential backoff, never past the caller's deadline; 0 = none")
	fs.IntVar(&t.client.BreakerFailures, "origin-breaker-failures", origin.DefaultBreakerFailures, "consecutive origin round trips answered UNAVAILABLE that open the circuit breaker; 0 disables the breaker")
	fs.DurationVar(&t.client.Timeout, "origin-timeout", origin.DefaultTimeout, "longest an origin round trip may take (each read attempt, each write, a whole Expand) when the caller's deadline is later or absent; 0 = no limit")
	fs.DurationVar(&t.client.BreakerCooldown, "origin-breaker-cooldown", origin.DefaultBreakerCooldown, "how long an open breaker answers UNAVAILABLE at once, without asking the origin, before it lets one probe through")
	t.maxObjectBytes = origin.DefaultMaxObjectBytes
	t.maxMessageBytes = origin.DefaultMaxMessageBytes
	fs.Var((*byteSize)(&t.maxObjectBytes), "max-object-bytes", "largest object accepted from the origin (id, type, refs and payload); a reply carrying a larger one is refused and counted in lookahead_origin_malformed_total")
	fs.Var((*byteSize)(&t.maxMessageBytes), "max-message-bytes", "largest gRPC message received or sent, by the sidecar's server and on the origin connection; a larger one fails RESOURCE_EXHAUSTED")
	fs.IntVar(&t.maxStreams, "max-concurrent-streams", defaultMaxStreams, "requests (calls and streams) one client connection may have in progress at once (HTTP/2 MAX_CONCURRENT_STREAMS); more wait in that client, so that one application's flood of misses cannot take the cores other connections' hits need; 0 = no limit")
	fs.IntVar(&t.maxConns, "max-connections", defaultMaxConns, "client connections each listener (TCP, unix socket) keeps open at once; one more waits, unaccepted, until one closes, so that what connections hold (each up to --max-concurrent-streams requests) is bounded by this flag and not by how many a peer opens; 0 = no limit")
	fs.DurationVar(&t.keepaliveTime, "keepalive-time", 30*time.Second, "how long a client connection may be silent before the sidecar pings it; one that does not answer within --keepalive-timeout is cut, and what its calls held (a GetGraph's --max-walks place, a near cache's queue) is freed")
	fs.DurationVar(&t.keepaliveTimeout, "keepalive-timeout", 10*time.Second, "how long a pinged client connection has to answer before the sidecar cuts it, and a new one to finish its handshake (TLS, HTTP/2) before it is closed")
	fs.DurationVar(&t.originKeepaliveTime, "origin-keepalive-time", 30*time.Second, "how long the origin connection may be silent, while a call to the origin is open (the change stream, an Expand), before the sidecar pings it; one that does not answer within --origin-keepalive-timeout is cut, so that an origin gone without closing the connection is found gone (its change stream reported down, its calls failed and retried) instead of looking alive until TCP gives up; at least 10s, 0 = no pings")
	fs.DurationVar(&t.originKeepaliveTimeout, "origin-keepalive-timeout", 10*time.Second, "how long a pinged origin connection has to answer before the sidecar cuts it")
	fs.StringVar(&t.serverFiles.CertFile, "tls-cert", "", "serve TLS with this certificate chain (PEM); needs --tls-key; empty = plaintext")
	fs.StringVar(&t.serverFiles.KeyFile, "tls-key", "", "private key (PEM) of --tls-cert")
	fs.StringVar(&t.serverFiles.ClientCAFile, "tls-client-ca", "", "require client certificates signed by these CAs (PEM): mutual TLS; needs --tls-cert")
	fs.StringVar(&t.originFiles.CAFile, "origin-tls-ca", "", "connect to the origin over TLS, trusting these CAs (PEM); empty with other --origin-tls-* flags = the system's roots")
	fs.StringVar(&t.originFiles.CertFile, "origin-tls-cert", "", "client certificate (PEM) for an origin that requires mutual TLS; needs --origin-tls-key")
	fs.StringVar(&t.originFiles.KeyFile, "origin-tls-key", "", "private key (PEM) of --origin-tls-cert")
	fs.StringVar(&t.originFiles.ServerName, "origin-tls-server-name", "", "name the origin's certificate must carry; empty = the host of --origin")
}

// finish checks the settings, naming the flag of each broken one, and loads
// the TLS files.
func (t *transportOptions) finish() error {
	var errs []error
	for _, v := range []struct {
		flag string
		n    int
		to   *int
	}{
		{"origin-retries", t.client.Retries, &t.client.Retries},
		{"origin-breaker-failures", t.client.BreakerFailures, &t.client.BreakerFailures},
	} {
		switch {
		case v.n < 0:
			errs = append(errs, fmt.Errorf("-%s %d: must not be negative", v.flag, v.n))
		case v.n == 0:
			*v.to = -1 // origin.Config: negative = none; zero would mean the default
		}
	}
	switch {
	case t.client.Timeout < 0:
		errs = append(errs, fmt.Errorf("-origin-timeout %v: must not be negative", t.client.Timeout))
	case t.client.Timeout == 0:
		t.client.Timeout = -1 // origin.Config: negative = none
	}
	if t.client.BreakerCooldown <= 0 {
		errs = append(errs, fmt.Errorf("-origin-breaker-cooldown %v: must be positive", t.client.BreakerCooldown))
	}
	if t.maxConns < 0 {
		errs = append(errs, fmt.Errorf("-max-connections %d: must not be negative (0 = no limit)", t.maxConns))
	}
	if t.maxStreams < 0 || t.maxStreams > math.MaxUint32 {
		errs = append(errs, fmt.Errorf("-max-concurrent-streams %d: must be between 0 (no limit) and %d", t.maxStreams, uint32(math.MaxUint32)))
	}
	errs = append(errs, flagconf.AtLeast("keepalive-time", t.keepaliveTime, time.Second),
		flagconf.AtLeast("keepalive-timeout", t.keepaliveTimeout, time.Second),
		flagconf.AtLeast("origin-keepalive-timeout", t.originKeepaliveTimeout, time.Second))
	if t.originKeepaliveTime != 0 && t.originKeepaliveTime < origin.MinKeepaliveTime {
		errs = append(errs, fmt.Errorf("-origin-keepalive-time %v: must be at least %v (gRPC pings no more often), or 0 for no pings", t.originKeepaliveTime, origin.MinKeepaliveTime))
	}
	if t.maxObjectBytes < 1 {
		errs = append(errs, fmt.Errorf("-max-object-bytes %d: must be positive", t.maxObjectBytes))
	}
	if t.maxMessageBytes < 1 || t.maxMessageBytes > 1<<31-1 {
		errs = append(errs, fmt.Errorf("-max-message-bytes %d: must be between 1 and 2GiB-1", t.maxMessageBytes))
	} else if t.maxMessageBytes <= t.maxObjectBytes {
		errs = append(errs, fmt.Errorf("-max-message-bytes %d: must exceed -max-object-bytes %d, or no object of the largest size could arrive", t.maxMessageBytes, t.maxObjectBytes))
	}
	t.client.MaxObjectBytes = t.maxObjectBytes
	t.client.MaxMessageBytes = int(min(t.maxMessageBytes, 1<<31-1))
	var err error
	if t.serverTLS, err = t.serverFiles.Load(); err != nil {
		errs = append(errs, fmt.Errorf("-tls-cert, -tls-key, -tls-client-ca: %w", err))
	}
	if t.originTLS, err = t.originFiles.Load(); err != nil {
		errs = append(errs, fmt.Errorf("-origin-tls-ca, -origin-tls-cert, -origin-tls-key: %w", err))
	}
	return errors.Join(errs...)
}

// watchTLS replaces the TLS settings finish loaded with ones that re-read
// their files every tlsconfig.DefaultRefresh, so that rotated certificates,
// keys and CAs are used by new handshakes without a restart; stop ends the
// watching.
func (t *transportOptions) watchTLS() (stop func(), err error) {
	srv, err := t.serverFiles.Watch(0)
	if err != nil {
		return nil, fmt.Errorf("-tls-cert, -tls-key, -tls-client-ca: %w", err)
	}
	cli, err := t.originFiles.Watch(0)
	if err != nil {
		srv.Close()
		return nil, fmt.Errorf("-origin-tls-ca, -origin-tls-cert, -origin-tls-key: %w", err)
	}
	if srv != nil {
		t.serverTLS = srv.Config
	}
	if cli != nil {
		t.originTLS = cli.Config
	}
	return func() { srv.Close(); cli.Close() }, nil
}

// dial connects to the origin at target.
func (t *transportOptions) dial(target string) (*grpc.ClientConn, error) {
	return origin.Dial(target, origin.DialConfig{TLS: t.originTLS, MaxMessageBytes: int(t.maxMessageBytes), ReconnectMax: time.Second,
		KeepaliveTime: t.originKeepaliveTime, KeepaliveTimeout: t.originKeepaliveTimeout, Options: t.dialOptions})
}

// maxHeaderBytes bounds the metadata of a request (HTTP/2
// SETTINGS_MAX_HEADER_LIST_SIZE): room for tokens and trace context, where
// gRPC's own 16 MiB let each of a connection's streams hold that much.
const maxHeaderBytes = 64 << 10

// serverOptions are the gRPC server's message, metadata and stream limits
// and credentials. A request is received only up to requestBytes(maxIDs).
func (t *transportOptions) serverOptions(maxIDs int) []grpc.ServerOption {
	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(int(t.requestBytes(maxIDs))), grpc.MaxSendMsgSize(int(t.maxMessageBytes)),
		grpc.MaxHeaderListSize(maxHeaderBytes),
		// gRPC's own pings a silent client after two hours: a client gone
		// without closing its connection would hold its calls till then.
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: t.keepaliveTime, Timeout: t.keepaliveTimeout}),
		// A connection that has not finished its handshake (TLS, HTTP/2
		// preface and settings) within the same time is closed: gRPC's own
		// wait is two minutes, each holding one of --max-connections.
		grpc.ConnectionTimeout(t.keepaliveTimeout),
		grpc.MaxConcurrentStreams(uint32(t.maxStreams))} // 0 is gRPC's own "no limit"
	return opts
}

// serverCredentials are the gRPC server's TLS, or none (plaintext).
func (t *transportOptions) serverCredentials() credentials.TransportCredentials {
	if t.serverTLS != nil {
		return credentials.NewTLS(t.serverTLS)
	}
	return insecure.NewCredentials()
}

// requestBytes is the largest request the sidecar may have to answer, up to
// --max-message-bytes: a Put of an object of --max-object-bytes, or two
// lists of maxIDs ids of the longest (a GetGraph's roots and fields), with
// 64 KiB for the rest of the request. gRPC refuses a longer one from its
// length prefix, before reading it, so that a client cannot make each of
// its streams hold --max-message-bytes for a request that would be refused.
func (t *transportOptions) requestBytes(maxIDs int) int64 {
	ids := 2 * int64(maxIDs) * (graph.MaxIDBytes + 1 + 2) // each with its tag and length
	return min(t.maxMessageBytes, max(t.maxObjectBytes, ids)+64<<10)
}
