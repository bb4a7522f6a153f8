package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
)

// originPeer is a client of the origin itself (through the latency proxy),
// with no sidecar: the direct, batched and redis cache-aside peers use it. It
// counts its round trips and the bytes it received, in the unit the sidecar's
// lookahead_origin_fetched_bytes_total uses (graph.Object.Size).
type originPeer struct {
	cc         *grpc.ClientConn
	rpc        lookaheadv1.OriginServiceClient
	mu         sync.Mutex // guards the counts: readers may share a peer
	roundTrips int
	objects    int
	bytes      int64
}

func dialOrigin(addr string) (*originPeer, error) {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return nil, err
	}
	// Connect (through the proxy, paying its latency) before anything is
	// timed or counted.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		cc.Close()
		return nil, fmt.Errorf("origin warm-up: %w", err)
	}
	return &originPeer{cc: cc, rpc: lookaheadv1.NewOriginServiceClient(cc)}, nil
}

func (p *originPeer) close() { p.cc.Close() }

// batchGet is one origin round trip for ids, every one of which must exist.
func (p *originPeer) batchGet(ctx context.Context, ids []string) ([]*lookaheadv1.Object, error) {
	objs, missing, err := p.batchGetSome(ctx, ids)
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("origin: missing %v", missing)
	}
	return objs, nil
}

// batchGetSome is one origin round trip for ids: the objects found and the
// ids of those that do not exist.
func (p *originPeer) batchGetSome(ctx context.Context, ids []string) ([]*lookaheadv1.Object, []string, error) {
	resp, err := p.rpc.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: ids})
	p.mu.Lock()
	defer p.mu.Unlock()
	p.roundTrips++
	if err != nil {
		return nil, nil, fmt.Errorf("origin batch get: %w", err)
	}
	p.objects += len(resp.GetObjects())
	for _, o := range resp.GetObjects() {
		p.bytes += graphpb.FromProto(o).Size()
	}
	return resp.GetObjects(), resp.GetMissingIds(), nil
}

func newRedisClient(addr string, pool int) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: addr, PoolSize: pool, DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
}

// cacheAside is the redis cache-aside peer: look in redis, on a miss fetch
// from the origin and fill redis. Objects are stored proto-encoded.
type cacheAside struct {
	r          *redis.Client
	o          *originPeer
	redisCalls int
}

// get returns the objects of ids: one MGET, then one origin BatchGet and one
// pipelined SET round for the misses.
func (c *cacheAside) get(ctx context.Context, ids []string) ([]*lookaheadv1.Object, error) {
	c.redisCalls++
	vals, err := c.r.MGet(ctx, ids...).Result()
	if err != nil {
		return nil, fmt.Errorf("redis mget: %w", err)
	}
	out := make([]*lookaheadv1.Object, len(ids))
	var miss []string
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			miss = append(miss, ids[i])
			continue
		}
		o := &lookaheadv1.Object{}
		if err := proto.Unmarshal([]byte(s), o); err != nil {
			return nil, fmt.Errorf("redis value of %s: %w", ids[i], err)
		}
		out[i] = o
	}
	if len(miss) == 0 {
		return out, nil
	}
	got, err := c.o.batchGet(ctx, miss)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*lookaheadv1.Object, len(got))
	c.redisCalls++
	pipe := c.r.Pipeline()
	for _, o := range got {
		byID[o.GetId()] = o
		b, err := proto.Marshal(o)
		if err != nil {
			return nil, err
		}
		pipe.Set(ctx, o.GetId(), b, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("redis set: %w", err)
	}
	for i, id := range ids {
		if out[i] == nil {
			if out[i] = byID[id]; out[i] == nil {
				return nil, errors.New("origin did not return " + id)
			}
		}
	}
	return out, nil
}

// getOne is get for a single id, with GET rather than MGET.
func (c *cacheAside) getOne(ctx context.Context, id string) (*lookaheadv1.Object, error) {
	c.redisCalls++
	b, err := c.r.Get(ctx, id).Bytes()
	if err == nil {
		o := &lookaheadv1.Object{}
		if err := proto.Unmarshal(b, o); err != nil {
			return nil, err
		}
		return o, nil
	}
	if !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("redis get: %w", err)
	}
	got, err := c.o.batchGet(ctx, []string{id})
	if err != nil {
		return nil, err
	}
	enc, err := proto.Marshal(got[0])
	if err != nil {
		return nil, err
	}
	c.redisCalls++
	if err := c.r.Set(ctx, id, enc, 0).Err(); err != nil {
		return nil, fmt.Errorf("redis set: %w", err)
	}
	return got[0], nil
}
