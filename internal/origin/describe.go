package origin

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// DatasetHeader is the header in which a Watch stream names the dataset its
// revisions belong to, beside RevisionHeader.
const DatasetHeader = "lookahead-dataset-id"

// Description is what an origin says of itself (origin.proto's Describe).
type Description struct {
	// DatasetID names the dataset the origin serves; empty = no identity.
	DatasetID string
	// Expand, Watch and Writes say which optional RPCs are implemented.
	Expand, Watch, Writes bool
	// MaxIDs, MaxDepth and MaxObjects are the origin's request limits; 0 =
	// not reported.
	MaxIDs, MaxDepth, MaxObjects int
}

// Probes bypass the breaker and are not counted as round trips: they report
// the origin's state whatever the breaker thinks of it, and a probe every
// second must not show up as fetching.

// Describe asks the origin who it is. An origin without Describe yields an
// error matching errors.ErrUnsupported.
func (c *Client) Describe(ctx context.Context) (Description, error) {
	resp, err := c.rpc.Describe(ctx, &lookaheadv1.DescribeRequest{})
	if err != nil {
		return Description{}, fmt.Errorf("origin describe: %w", unsupported(err))
	}
	l := resp.GetLimits()
	c.maxIDs.Store(int64(l.GetMaxIds()))
	c.maxObjects.Store(int64(l.GetMaxObjects()))
	return Description{
		DatasetID: resp.GetDatasetId(),
		Expand:    resp.GetExpand(), Watch: resp.GetWatch(), Writes: resp.GetWrites(),
		MaxIDs: int(l.GetMaxIds()), MaxDepth: int(l.GetMaxDepth()), MaxObjects: int(l.GetMaxObjects()),
	}, nil
}

// Check asks the origin's standard health service whether it is serving. An
// origin without grpc.health.v1 yields an error matching
// errors.ErrUnsupported (see Ping for a probe every origin answers).
func (c *Client) Check(ctx context.Context) error {
	resp, err := c.health.Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return fmt.Errorf("origin health: %w", unsupported(err))
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("origin health: %s", resp.GetStatus())
	}
	return nil
}

// Ping makes the cheapest round trip every origin answers, a BatchGet of no
// ids: it succeeds when the origin is reachable and serving.
func (c *Client) Ping(ctx context.Context) error {
	if _, err := c.rpc.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{}); err != nil {
		return fmt.Errorf("origin ping: %w", err)
	}
	return nil
}

// unsupported marks an UNIMPLEMENTED answer as errors.ErrUnsupported.
func unsupported(err error) error {
	if status.Code(err) == codes.Unimplemented {
		return fmt.Errorf("%w: %w", errors.ErrUnsupported, err)
	}
	return err
}
