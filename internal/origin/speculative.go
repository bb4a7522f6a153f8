package origin

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// SpeculativeKey is the gRPC metadata key that marks a call as speculation:
// a prefetch no application is waiting on, which an origin under load may
// shed with RESOURCE_EXHAUSTED (see docs/origin.md).
const SpeculativeKey = "lookahead-speculative"

// speculationKey marks a context Speculative made, for the client's own
// reading: cheaper than parsing the outgoing metadata back.
type speculationKey struct{}

// Speculative marks the origin calls made with ctx as speculation.
func Speculative(ctx context.Context) context.Context {
	ctx = context.WithValue(ctx, speculationKey{}, true)
	return metadata.AppendToOutgoingContext(ctx, SpeculativeKey, "1")
}

func isSpeculation(ctx context.Context) bool {
	marked, _ := ctx.Value(speculationKey{}).(bool)
	return marked
}

// RoundTrip is one origin round trip as Config.Observe is told of it.
type RoundTrip struct {
	RPC         string // "BatchGet", "Expand", "Put", "Delete"
	IDs         int    // ids asked for (an Expand's roots); 0 for a probe
	Speculative bool   // made with a context Speculative marked
	Elapsed     time.Duration
	Err         error // the attempt's error, as the caller's retry policy saw it
}

// Shed reports whether the origin refused a speculative call under load
// (RESOURCE_EXHAUSTED, not a reply over the receive limit): a signal to
// back off, never a failure of the origin.
func (rt RoundTrip) Shed() bool {
	return rt.Speculative && status.Code(rt.Err) == codes.ResourceExhausted && !overLimit(rt.Err)
}

// IsSpeculative reports whether an incoming call carries the mark, for
// origins written in Go.
func IsSpeculative(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(SpeculativeKey)
	return len(vals) > 0 && vals[0] == "1"
}
