// Package origin is the sidecar's client for an origin object service.
package origin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
	"github.com/lookahead-dev/lookahead/internal/metrics"
)

// Client calls one origin. Every method is one round trip, counted in
// lookahead_origin_round_trips_total and timed in
// lookahead_origin_round_trip_duration_seconds. Batching and parallelism are
// the caller's business (the prefetch engine's).
type Client struct {
	rpc    lookaheadv1.OriginServiceClient
	health healthpb.HealthClient
	m      *metrics.Set
}

// NewClient wraps a connection to an origin.
func NewClient(cc grpc.ClientConnInterface, m *metrics.Set) *Client {
	return &Client{
		rpc:    lookaheadv1.NewOriginServiceClient(cc),
		health: healthpb.NewHealthClient(cc),
		m:      m,
	}
}

func (c *Client) observe(rpc string, start time.Time, err error) {
	c.m.OriginRoundTrips.WithLabelValues(rpc, status.Code(err).String()).Inc()
	c.m.OriginDuration.WithLabelValues(rpc).Observe(time.Since(start).Seconds())
}

// BatchGet fetches ids in one round trip. Objects the origin sends that were
// not asked for, that repeat, or that are invalid are dropped: a malformed
// reply must never put a wrong object in the cache. Asked-for ids that came
// back neither as an object nor as missing are reported missing.
func (c *Client) BatchGet(ctx context.Context, ids []string) (found []*graph.Object, missing []string, err error) {
	start := time.Now()
	resp, err := c.rpc.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: ids})
	c.observe("BatchGet", start, err)
	if err != nil {
		return nil, nil, fmt.Errorf("origin batch get: %w", err)
	}
	want := make(map[string]bool, len(ids)) // id → still outstanding
	for _, id := range ids {
		want[id] = true
	}
	found = make([]*graph.Object, 0, len(resp.GetObjects()))
	for _, p := range resp.GetObjects() {
		if !want[p.GetId()] || graph.ValidateID(p.GetId()) != nil {
			continue
		}
		want[p.GetId()] = false
		found = append(found, graphpb.FromProto(p))
	}
	for _, id := range ids {
		if want[id] {
			want[id] = false
			missing = append(missing, id)
		}
	}
	return found, missing, nil
}

// Expand asks the origin to walk the graph below roots server-side and hands
// each level to fn as it streams in: the whole subgraph in one round trip.
// An origin that does not implement Expand yields an error matching
// errors.ErrUnsupported. Objects are never handed over twice.
func (c *Client) Expand(ctx context.Context, roots []string, b graph.Budget, fn func(level int, objs []*graph.Object, missing []string) error) error {
	start := time.Now()
	err := c.expand(ctx, roots, b, fn)
	c.observe("Expand", start, err)
	if status.Code(err) == codes.Unimplemented {
		return fmt.Errorf("origin expand: %w: %w", errors.ErrUnsupported, err)
	}
	if err != nil {
		return fmt.Errorf("origin expand: %w", err)
	}
	return nil
}

func (c *Client) expand(ctx context.Context, roots []string, b graph.Budget, fn func(int, []*graph.Object, []string) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the stream if fn stops early
	stream, err := c.rpc.Expand(ctx, &lookaheadv1.ExpandRequest{
		Roots: roots, Depth: uint32(b.Depth), MaxObjects: uint32(b.MaxObjects), Fields: b.Fields,
	})
	if err != nil {
		return err
	}
	seen := make(map[string]struct{})
	for {
		resp, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		objs := make([]*graph.Object, 0, len(resp.GetObjects()))
		for _, p := range resp.GetObjects() {
			if _, dup := seen[p.GetId()]; dup || graph.ValidateID(p.GetId()) != nil {
				continue
			}
			seen[p.GetId()] = struct{}{}
			objs = append(objs, graphpb.FromProto(p))
		}
		if err := fn(int(resp.GetLevel()), objs, resp.GetMissingIds()); err != nil {
			return err
		}
	}
}

// Put writes o at the origin; expected, when non-nil, makes it conditional.
func (c *Client) Put(ctx context.Context, o *graph.Object, expected *uint64) (version uint64, err error) {
	start := time.Now()
	resp, err := c.rpc.Put(ctx, &lookaheadv1.OriginServicePutRequest{Object: graphpb.ToProto(o), ExpectedVersion: expected})
	c.observe("Put", start, err)
	if err != nil {
		return 0, fmt.Errorf("origin put: %w", err)
	}
	return resp.GetVersion(), nil
}

// Delete removes id at the origin; expected, when non-nil, makes it conditional.
func (c *Client) Delete(ctx context.Context, id string, expected *uint64) error {
	start := time.Now()
	_, err := c.rpc.Delete(ctx, &lookaheadv1.OriginServiceDeleteRequest{Id: id, ExpectedVersion: expected})
	c.observe("Delete", start, err)
	if err != nil {
		return fmt.Errorf("origin delete: %w", err)
	}
	return nil
}

// Check asks the origin's standard health service whether it is serving.
func (c *Client) Check(ctx context.Context) error {
	resp, err := c.health.Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return fmt.Errorf("origin health: %w", err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("origin health: %s", resp.GetStatus())
	}
	return nil
}
