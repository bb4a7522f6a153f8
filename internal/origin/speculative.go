package origin

import (
	"context"

	"google.golang.org/grpc/metadata"
)

// SpeculativeKey is the gRPC metadata key that marks a call as speculation:
// a prefetch no application is waiting on, which an origin under load may
// shed with RESOURCE_EXHAUSTED (see docs/origin.md).
const SpeculativeKey = "lookahead-speculative"

// Speculative marks the origin calls made with ctx as speculation.
func Speculative(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, SpeculativeKey, "1")
}

// IsSpeculative reports whether an incoming call carries the mark, for
// origins written in Go.
func IsSpeculative(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(SpeculativeKey)
	return len(vals) > 0 && vals[0] == "1"
}
