package conformance

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// speculativeHeader marks the sidecar's speculative calls (docs/origin.md).
const speculativeHeader = "lookahead-speculative"

// batchGetSpeculative: a call marked speculative is answered like any
// other, or shed with RESOURCE_EXHAUSTED. Any other code reads to the
// sidecar as an origin in trouble: UNAVAILABLE counts against its circuit
// breaker, which then refuses the demand that was to be served first.
func (c *checker) batchGetSpeculative(ctx context.Context) error {
	ids := []string{c.prefix + "never-1"}
	ctx = metadata.AppendToOutgoingContext(ctx, speculativeHeader, "1")
	resp, err := c.rpc.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: ids})
	if status.Code(err) == codes.ResourceExhausted {
		return nil // shed: the contract allows it
	}
	if err != nil {
		return fmt.Errorf("BatchGet marked %s: 1: want OK, or ResourceExhausted when shed, got %w", speculativeHeader, err)
	}
	if len(resp.GetObjects()) > 0 || !sameSet(resp.GetMissingIds(), ids) {
		return fmt.Errorf("BatchGet marked %s: 1 of an id that does not exist: %d objects, missing_ids %q; want %q missing, as unmarked",
			speculativeHeader, len(resp.GetObjects()), resp.GetMissingIds(), ids)
	}
	return nil
}
