package origin

import (
	"crypto/tls"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
)

// DialConfig says how to connect to the origin. Zero values take the
// documented defaults.
type DialConfig struct {
	// TLS secures the connection; nil = plaintext, for loopback.
	TLS *tls.Config
	// MaxMessageBytes bounds each message received from or sent to the
	// origin; a larger one fails its call with RESOURCE_EXHAUSTED, made by
	// gRPC itself. Default 64 MiB.
	MaxMessageBytes int
	// ReconnectMax caps the wait between attempts to re-establish a broken
	// connection; default 1s. gRPC's own default (120s) would leave the
	// sidecar failing fast for up to two minutes after its origin is back.
	ReconnectMax time.Duration
	// KeepaliveTime and KeepaliveTimeout: while a call is open (a Watch
	// stream, an Expand) and the connection has been silent for
	// KeepaliveTime, it is pinged, and cut when no answer comes within
	// KeepaliveTimeout: an origin gone without closing the connection (its
	// host vanished, a partition) fails the calls at once, and a change
	// stream is known to be down, instead of looking alive until TCP gives
	// up. 0 = gRPC's own (no pings). gRPC pings no more often than every
	// 10s; an origin must permit that (docs/origin.md).
	KeepaliveTime, KeepaliveTimeout time.Duration
	// Options are added to the connection's own (tracing's stats handler).
	Options []grpc.DialOption
}

// MinKeepaliveTime is the shortest DialConfig.KeepaliveTime gRPC honours;
// a shorter one is raised to it.
const MinKeepaliveTime = 10 * time.Second

// PermitKeepalive is the server option of an origin in Go that lets
// sidecars ping it (DialConfig.KeepaliveTime): gRPC's own policy answers a
// client that pings more often than every 5 minutes with GOAWAY
// ("too_many_pings"), cutting its calls, a change stream among them.
func PermitKeepalive() grpc.ServerOption {
	return grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: MinKeepaliveTime, PermitWithoutStream: true})
}

// DefaultMaxMessageBytes is DialConfig.MaxMessageBytes's default.
const DefaultMaxMessageBytes = 64 << 20

// MaxHeaderBytes bounds the metadata (headers and trailers) of each reply
// from the origin: room for its status details, where gRPC's own 16 MiB let
// an origin make each call in flight hold that much. A reply with more
// fails its call INTERNAL, made by gRPC itself.
const MaxHeaderBytes = 1 << 20

// Dial creates the connection to the origin at target (host:port or a grpc
// target such as unix:///path, dns:///host:port, or static:///a:1,b:2 for a
// fixed list). Calls are spread round robin over the addresses the target
// resolves to, the origin's replicas.
// Like grpc.NewClient it does no I/O: the connection is made by the first
// call.
func Dial(target string, cfg DialConfig) (*grpc.ClientConn, error) {
	if cfg.MaxMessageBytes == 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if cfg.ReconnectMax == 0 {
		cfg.ReconnectMax = time.Second
	}
	if cfg.MaxMessageBytes < 0 || cfg.ReconnectMax < 0 {
		return nil, fmt.Errorf("origin dial: max message bytes %d and reconnect max %v must not be negative", cfg.MaxMessageBytes, cfg.ReconnectMax)
	}
	creds := insecure.NewCredentials()
	if cfg.TLS != nil {
		creds = credentials.NewTLS(cfg.TLS)
	}
	var ka []grpc.DialOption
	if cfg.KeepaliveTime > 0 {
		ka = append(ka, grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: cfg.KeepaliveTime, Timeout: cfg.KeepaliveTimeout}))
	}
	bo := backoff.DefaultConfig
	bo.BaseDelay = min(bo.BaseDelay, cfg.ReconnectMax/4)
	bo.MaxDelay = cfg.ReconnectMax
	cc, err := grpc.NewClient(target, append([]grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(cfg.MaxMessageBytes), grpc.MaxCallSendMsgSize(cfg.MaxMessageBytes)),
		grpc.WithMaxHeaderListSize(MaxHeaderBytes),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: bo, MinConnectTimeout: 5 * time.Second}),
		// Every address the target resolves to is a replica: spread calls
		// over those that are up. A call cut by a replica going away fails
		// UNAVAILABLE, and the read's retry goes to another.
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`),
		grpc.WithResolvers(staticBuilder{}),
	}, append(ka, cfg.Options...)...)...)
	if err != nil {
		return nil, fmt.Errorf("origin dial %s: %w", target, err)
	}
	return cc, nil
}
