package origin_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/metrics"
	"github.com/lookahead-dev/lookahead/internal/origin"
)

// replica is an origin process stand-in on a real loopback port that
// answers every id and counts the calls it served.
type replica struct {
	gs     *grpc.Server
	addr   string
	served atomic.Int64
	done   chan struct{}
}

func startReplica(t *testing.T) *replica {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r := &replica{gs: grpc.NewServer(), addr: lis.Addr().String(), done: make(chan struct{})}
	lookaheadv1.RegisterOriginServiceServer(r.gs, &fakeOrigin{batchGet: func(_ int, req *lookaheadv1.OriginServiceBatchGetRequest) (*lookaheadv1.OriginServiceBatchGetResponse, error) {
		r.served.Add(1)
		resp := &lookaheadv1.OriginServiceBatchGetResponse{}
		for _, id := range req.GetIds() {
			resp.Objects = append(resp.Objects, &lookaheadv1.Object{Id: id, Version: 1})
		}
		return resp, nil
	}})
	go func() { _ = r.gs.Serve(lis); close(r.done) }()
	t.Cleanup(func() { r.gs.Stop(); <-r.done })
	return r
}

func TestReplicaKilledMidRunFailsNoRead(t *testing.T) {
	a, b := startReplica(t), startReplica(t)
	res := manual.NewBuilderWithScheme("replicas")
	res.InitialState(resolver.State{Addresses: []resolver.Address{{Addr: a.addr}, {Addr: b.addr}}})
	resolver.Register(res)
	cc, err := origin.Dial("replicas:///origin", origin.DialConfig{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	c, err := origin.New(cc, origin.Config{}, metrics.New(prometheus.NewRegistry()))
	require.NoError(t, err)

	ctx := context.Background()
	const readers, reads = 8, 200
	var failed atomic.Int64
	var once sync.Once
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			for i := range reads {
				if i == reads/4 && a.served.Load() > 0 {
					once.Do(a.gs.Stop) // a replica dies under load, its calls cut
				}
				found, _, err := c.BatchGet(ctx, []string{"x"})
				if err != nil || len(found) != 1 {
					failed.Add(1)
					t.Logf("read %d: %v", i, err)
				}
			}
		})
	}
	wg.Wait()
	assert.Zero(t, failed.Load(), "no read failed")
	assert.Positive(t, a.served.Load(), "both replicas served before the kill")
	assert.Positive(t, b.served.Load())
	before := b.served.Load()
	_, _, err = c.BatchGet(ctx, []string{"y"})
	require.NoError(t, err)
	assert.Equal(t, before+1, b.served.Load(), "the survivor serves on")
}
