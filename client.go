package lookahead

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/bufpool"
)

// Client talks to one sidecar over one connection; it is safe for
// concurrent use.
type Client struct {
	conn *grpc.ClientConn
	rpc  lookaheadv1.SidecarServiceClient
	near *nearCache // nil unless WithNearCache
}

// Option configures Dial.
type Option func(*options)

type options struct {
	grpc      []grpc.DialOption
	nearBytes int64
	name      string
}

// WithGRPCOptions passes options to grpc.NewClient (credentials, dialers,
// interceptors). Without any, the connection is plaintext, as befits
// loopback inside a pod.
func WithGRPCOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.grpc = append(o.grpc, opts...) }
}

// Dial connects to a sidecar at target: "127.0.0.1:7070" for TCP or
// "unix:///run/lookahead.sock" for a unix socket. The connection is made
// lazily, on the first call.
func Dial(target string, opts ...Option) (*Client, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	gopts := o.grpc
	if len(gopts) == 0 {
		gopts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	// Received messages are read into buffers that are not cleared first
	// (internal/bufpool); an option of the caller's may replace the pool.
	gopts = append([]grpc.DialOption{experimental.WithBufferPool(new(bufpool.Pool))}, gopts...)
	conn, err := grpc.NewClient(target, gopts...)
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", target, err)
	}
	c := &Client{conn: conn, rpc: lookaheadv1.NewSidecarServiceClient(conn)}
	if o.nearBytes > 0 {
		c.near = startNear(c.rpc, o.nearBytes, o.name)
	}
	return c, nil
}

// Close stops the near cache's subscription, if any, and closes the
// connection.
func (c *Client) Close() error {
	if c.near != nil {
		c.near.close()
	}
	return c.conn.Close()
}

// Service returns the generated stub, for calls the helpers do not cover.
// Writes made through it bypass the near cache's local invalidation.
func (c *Client) Service() lookaheadv1.SidecarServiceClient { return c.rpc }

// Prefetch overrides the sidecar's prefetch settings for one request; nil
// fields keep the sidecar's.
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

// Status says where an answer came from.
type Status struct {
	// Cache is where the sidecar found the object; CACHE_STATUS_UNSPECIFIED
	// for an answer from the near cache.
	Cache lookaheadv1.CacheStatus
	// Stale is set when the sidecar answered a copy past its TTL or one it
	// could not verify against the origin's change stream. The near cache
	// never keeps stale answers.
	Stale bool
	// Near is set when the near cache answered, without a call.
	Near bool
}

// Result is one object of a BatchGet or GetGraph answer.
type Result struct {
	Object *lookaheadv1.Object
	Status
	// Level is the distance from the nearest root (GetGraph only).
	Level int
}

func fromProto(r *lookaheadv1.Result) Result {
	return Result{Object: r.GetObject(), Status: Status{Cache: r.GetStatus(), Stale: r.GetStale()}, Level: int(r.GetLevel())}
}

// Get returns one object and where it came from. A missing object is a
// NOT_FOUND status error. hint may be nil; a near-cache hit ignores it (the
// sidecar already prefetched when it answered first).
func (c *Client) Get(ctx context.Context, id string, hint *Prefetch) (*lookaheadv1.Object, Status, error) {
	if c.near != nil {
		if o := c.near.get(id); o != nil {
			return o, Status{Near: true}, nil
		}
		return c.near.fetchOne(ctx, id, hint.hint())
	}
	resp, err := c.rpc.Get(ctx, &lookaheadv1.GetRequest{Id: id, Hint: hint.hint()})
	if err != nil {
		return nil, Status{}, err
	}
	return resp.GetObject(), Status{Cache: resp.GetStatus(), Stale: resp.GetStale()}, nil
}

// BatchGet returns the objects found among ids, in request order without
// duplicates, and the ids that do not exist. With a near cache, only the ids
// it does not hold are asked of the sidecar.
func (c *Client) BatchGet(ctx context.Context, ids []string, hint *Prefetch) ([]Result, []string, error) {
	if c.near != nil {
		return c.near.batchGet(ctx, ids, hint.hint())
	}
	resp, err := c.rpc.BatchGet(ctx, &lookaheadv1.BatchGetRequest{Ids: ids, Hint: hint.hint()})
	if err != nil {
		return nil, nil, err
	}
	rs := make([]Result, len(resp.GetResults()))
	for i, r := range resp.GetResults() {
		rs[i] = fromProto(r)
	}
	return rs, resp.GetMissingIds(), nil
}

// WriteOption conditions a Put or Delete.
type WriteOption func(*uint64) *uint64

// IfVersion makes a write succeed only while the object is at version v (0:
// while it does not exist); otherwise the sidecar answers
// FAILED_PRECONDITION.
func IfVersion(v uint64) WriteOption {
	return func(*uint64) *uint64 { return &v }
}

func expected(opts []WriteOption) *uint64 {
	var e *uint64
	for _, o := range opts {
		e = o(e)
	}
	return e
}

// Put writes o through the sidecar to the origin and returns the version the
// origin assigned (o.Version is ignored). The near cache drops its copy
// before Put returns, so the client's next read sees the write.
func (c *Client) Put(ctx context.Context, o *lookaheadv1.Object, opts ...WriteOption) (uint64, error) {
	if o == nil {
		return 0, errors.New("put: nil object")
	}
	var t ticket
	if c.near != nil {
		t, ctx = c.near.tracked(ctx)
	}
	resp, err := c.rpc.Put(ctx, &lookaheadv1.PutRequest{Object: o, ExpectedVersion: expected(opts)})
	if c.near != nil {
		c.near.wrote(t, o.GetId(), resp.GetVersion(), false, err)
	}
	if err != nil {
		return 0, err
	}
	return resp.GetVersion(), nil
}

// Delete deletes id at the origin through the sidecar. The near cache drops
// its copy before Delete returns.
func (c *Client) Delete(ctx context.Context, id string, opts ...WriteOption) error {
	var t ticket
	if c.near != nil {
		t, ctx = c.near.tracked(ctx)
	}
	_, err := c.rpc.Delete(ctx, &lookaheadv1.DeleteRequest{Id: id, ExpectedVersion: expected(opts)})
	if c.near != nil {
		c.near.wrote(t, id, 0, true, err)
	}
	return err
}

// Invalidate drops the sidecar's cached copies of ids (and the near
// cache's) without touching the origin, and returns how many the sidecar
// held.
func (c *Client) Invalidate(ctx context.Context, ids ...string) (int, error) {
	if c.near != nil {
		for _, id := range ids {
			c.near.floor(id, 0, false, false)
		}
	}
	resp, err := c.rpc.Invalidate(ctx, &lookaheadv1.InvalidateRequest{Ids: ids})
	if err != nil {
		return 0, err
	}
	return int(resp.GetInvalidated()), nil
}

// Uint32 returns a pointer to v, for the optional fields of Prefetch and
// Graph.
func Uint32(v uint32) *uint32 { return &v }
