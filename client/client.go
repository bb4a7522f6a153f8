// Package client is the Go client for a lookahead sidecar.
package client

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// Client talks to one sidecar over one connection; it is safe for
// concurrent use.
type Client struct {
	conn *grpc.ClientConn
	rpc  lookaheadv1.SidecarServiceClient
}

// Dial connects to a sidecar at target: "127.0.0.1:7070" for TCP or
// "unix:///run/lookahead.sock" for a unix socket. Without options the
// connection is plaintext, as befits loopback inside a pod.
func Dial(target string, opts ...grpc.DialOption) (*Client, error) {
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, err
	}
	return &Client{conn: conn, rpc: lookaheadv1.NewSidecarServiceClient(conn)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Service returns the generated stub, for calls the helpers do not cover.
func (c *Client) Service() lookaheadv1.SidecarServiceClient { return c.rpc }

// Prefetch overrides the sidecar's prefetch settings for one request.
type Prefetch struct {
	Depth      *uint32
	MaxObjects *uint32
	Fields     []string
}

func (p *Prefetch) hint() *lookaheadv1.PrefetchHint {
	if p == nil {
		return nil
	}
	return &lookaheadv1.PrefetchHint{Depth: p.Depth, MaxObjects: p.MaxObjects, Fields: p.Fields}
}

// Get returns one object and where the sidecar found it. A missing object
// is a NOT_FOUND status error. p may be nil.
func (c *Client) Get(ctx context.Context, id string, p *Prefetch) (*lookaheadv1.Object, lookaheadv1.CacheStatus, error) {
	resp, err := c.rpc.Get(ctx, &lookaheadv1.GetRequest{Id: id, Hint: p.hint()})
	if err != nil {
		return nil, 0, err
	}
	return resp.GetObject(), resp.GetStatus(), nil
}

// BatchGet returns the objects found among ids and the ids that are missing.
func (c *Client) BatchGet(ctx context.Context, ids []string, p *Prefetch) ([]*lookaheadv1.Result, []string, error) {
	resp, err := c.rpc.BatchGet(ctx, &lookaheadv1.BatchGetRequest{Ids: ids, Hint: p.hint()})
	if err != nil {
		return nil, nil, err
	}
	return resp.GetResults(), resp.GetMissingIds(), nil
}

// Graph describes a GetGraph walk. Nil Depth and MaxObjects take the
// sidecar's settings.
type Graph struct {
	Roots      []string
	Depth      *uint32
	MaxObjects *uint32
	Fields     []string
}

// GetGraph streams the subgraph below g.Roots to fn in breadth-first order
// and returns the ids that do not exist.
func (c *Client) GetGraph(ctx context.Context, g Graph, fn func(*lookaheadv1.Result) error) (missing []string, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.rpc.GetGraph(ctx, &lookaheadv1.GetGraphRequest{
		Roots: g.Roots, Depth: g.Depth, MaxObjects: g.MaxObjects, Fields: g.Fields,
	})
	if err != nil {
		return nil, err
	}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return missing, nil
		}
		if err != nil {
			return nil, err
		}
		for _, r := range resp.GetResults() {
			if err := fn(r); err != nil {
				return nil, err
			}
		}
		missing = append(missing, resp.GetMissingIds()...)
	}
}

// Uint32 returns a pointer to v, for the optional fields above.
func Uint32(v uint32) *uint32 { return &v }
