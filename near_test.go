package lookahead_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/scrape"

	"github.com/lookahead-dev/lookahead"
)

const waitFor, tick = 10 * time.Second, 2 * time.Millisecond

// nearHit reads id until the near cache answers it.
func nearHit(t *testing.T, c *lookahead.Client, id string) *lookaheadv1.Object {
	t.Helper()
	var obj *lookaheadv1.Object
	require.Eventually(t, func() bool {
		o, st, err := c.Get(context.Background(), id, nil)
		obj = o
		return err == nil && st.Near
	}, waitFor, tick, "%s is answered by the near cache", id)
	return obj
}

func TestNearCacheAnswersWhatWasReadInProcess(t *testing.T) {
	c := dial(t, sidecarAddr, lookahead.WithNearCache(1<<20), lookahead.WithClientName("test"))
	obj := nearHit(t, c, "task-3.1")
	assert.Equal(t, "task-3.1", obj.GetId())
	rs, missing, err := c.BatchGet(context.Background(), []string{"task-3.1", "task-3.2", "task-3.1", "nope"}, nil)
	require.NoError(t, err)
	require.Len(t, rs, 2, "request order, duplicates removed")
	assert.Equal(t, "task-3.1", rs[0].Object.GetId())
	assert.True(t, rs[0].Near)
	assert.Equal(t, "task-3.2", rs[1].Object.GetId())
	assert.Equal(t, []string{"nope"}, missing)
	st := c.NearStats()
	assert.Positive(t, st.Hits)
	assert.Positive(t, st.Misses)
	assert.Positive(t, st.Objects)
}

func TestNearCacheSeesWritesOwnAtOnceOthersSoon(t *testing.T) {
	c := dial(t, sidecarAddr, lookahead.WithNearCache(1<<20))
	other := dial(t, sidecarAddr)
	ctx := context.Background()
	obj := nearHit(t, c, "task-3.3")
	t.Cleanup(func() { // the tests share the origin: put back what this one deletes
		_, err := other.Put(ctx, &lookaheadv1.Object{Id: obj.GetId(), Type: obj.GetType(), Refs: obj.GetRefs(), Payload: obj.GetPayload()})
		assert.NoError(t, err)
	})

	edit := proto.Clone(obj).(*lookaheadv1.Object)
	edit.Payload = []byte("own")
	v, err := c.Put(ctx, edit)
	require.NoError(t, err)
	got, _, err := c.Get(ctx, "task-3.3", nil)
	require.NoError(t, err)
	assert.Equal(t, v, got.GetVersion(), "read your own write, no waiting")

	nearHit(t, c, "task-3.3")
	edit.Payload = []byte("other")
	v2, err := other.Put(ctx, edit)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		got, _, err := c.Get(ctx, "task-3.3", nil)
		return err == nil && got.GetVersion() == v2
	}, waitFor, tick, "another client's write reaches the near cache")
	assert.Positive(t, c.NearStats().Invalidations)

	require.NoError(t, c.Delete(ctx, "task-3.3"))
	_, _, err = c.Get(ctx, "task-3.3", nil)
	assert.Error(t, err, "own delete is seen at once")
}

func TestNearCacheIsPushedWhatTheSidecarPrefetches(t *testing.T) {
	c := dial(t, sidecarAddr, lookahead.WithNearCache(8<<20))
	ctx := context.Background()
	nearHit(t, c, "task-3.5") // subscribed
	_, err := c.Invalidate(ctx, "task-3.4", "task-3.21", "task-3.22")
	require.NoError(t, err)
	_, _, err = c.BatchGet(ctx, []string{"task-3.4"}, &lookahead.Prefetch{Depth: lookahead.Uint32(2)})
	require.NoError(t, err)
	// No read of the children before they arrive: a read would fill the
	// near cache itself.
	require.Eventually(t, func() bool { return lookahead.Holds(c, "task-3.21") && lookahead.Holds(c, "task-3.22") },
		waitFor, tick, "the refetched children are pushed")
	usedBefore := prefetchUsed(t)
	for _, id := range []string{"task-3.21", "task-3.22"} {
		_, st, err := c.Get(ctx, id, nil)
		require.NoError(t, err)
		assert.True(t, st.Near, "%s was pushed", id)
	}
	assert.GreaterOrEqual(t, c.NearStats().PushesUsed, uint64(2))
	require.Eventually(t, func() bool { return prefetchUsed(t) >= usedBefore+2 }, waitFor, tick,
		"the client reports the pushes it used, so the sidecar's prefetcher moves on")
}

// A sidecar whose cache holds what it predicts pushes it as it would what
// it fetches: a near cache in front of a warm sidecar is filled by its
// predictions too, not only by the application's own reads (each a sidecar
// round trip).
func TestNearCacheIsPushedWhatAWarmSidecarHolds(t *testing.T) {
	ctx := context.Background()
	children := []string{"task-3.36", "task-3.37", "task-3.38", "task-3.39", "task-3.40"}
	other := dial(t, sidecarAddr)
	_, _, err := other.BatchGet(ctx, append([]string{"task-3.7"}, children...), nil) // now held
	require.NoError(t, err)

	c := dial(t, sidecarAddr, lookahead.WithNearCache(8<<20))
	nearHit(t, c, "task-3.5") // subscribed
	_, _, err = c.BatchGet(ctx, []string{"task-3.7"}, &lookahead.Prefetch{Depth: lookahead.Uint32(1)})
	require.NoError(t, err)
	// No read of the children before they arrive: a read would fill the
	// near cache itself.
	require.Eventually(t, func() bool {
		return !slices.ContainsFunc(children, func(id string) bool { return !lookahead.Holds(c, id) })
	},
		waitFor, tick, "the held children are pushed")
	for _, id := range children {
		_, st, err := c.Get(ctx, id, nil)
		require.NoError(t, err)
		assert.True(t, st.Near, "%s was pushed", id)
	}
}

// prefetchUsed reads the shared sidecar's lookahead_prefetch_used_total.
func prefetchUsed(t *testing.T) float64 {
	t.Helper()
	m, err := scrape.Fetch(context.Background(), sidecarMetrics)
	require.NoError(t, err)
	return m.Sum("lookahead_prefetch_used_total")
}

func TestNearCacheDropsWhatReachesTheSidecarsTTL(t *testing.T) {
	origin, err := startOrigin(filepath.Join(t.TempDir(), "o"))
	require.NoError(t, err)
	defer origin.Stop(10 * time.Second)
	// No write is made: only the sidecar's expiry can invalidate the copy
	// (the near cache's own max-age rule stops answering it, counting no
	// invalidation).
	sc, err := startSidecar(origin.GRPC, "--ttl", "2s", "--prefetch-mode", "off")
	require.NoError(t, err)
	defer sc.Stop(10 * time.Second)
	c := dial(t, sc.GRPC, lookahead.WithNearCache(1<<20))
	nearHit(t, c, "task-0")
	require.Eventually(t, func() bool { return c.NearStats().Invalidations > 0 }, waitFor, tick,
		"no write was made: the sidecar's expiry is what drops the copy")
	assert.False(t, lookahead.Holds(c, "task-0"))
	_, st, err := c.Get(context.Background(), "task-0", nil)
	require.NoError(t, err)
	assert.False(t, st.Near, "read through the sidecar again, which refetches")
}

func TestNearCacheIsEmptiedWhenTheStreamBreaks(t *testing.T) {
	origin, err := startOrigin(filepath.Join(t.TempDir(), "o"))
	require.NoError(t, err)
	defer origin.Stop(10 * time.Second)
	sc, err := startSidecar(origin.GRPC)
	require.NoError(t, err)
	c := dial(t, sc.GRPC, lookahead.WithNearCache(1<<20))
	nearHit(t, c, "task-0")
	require.NoError(t, sc.Stop(10*time.Second))
	require.Eventually(t, func() bool {
		st := c.NearStats()
		return st.Objects == 0 && st.Flushes > 0
	}, waitFor, tick)
	_, st, err := c.Get(context.Background(), "task-0", nil)
	assert.Error(t, err, "no channel, no near answers")
	assert.False(t, st.Near)
}

func TestNearCacheMetricsCollector(t *testing.T) {
	c := dial(t, sidecarAddr, lookahead.WithNearCache(1<<20))
	nearHit(t, c, "task-3")
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c.Collector()))
	families, err := reg.Gather()
	require.NoError(t, err)
	values := map[string]float64{}
	for _, f := range families {
		m := f.GetMetric()[0]
		values[f.GetName()] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	assert.Len(t, values, 8)
	assert.Positive(t, values["lookahead_client_near_hits_total"])
	assert.Positive(t, values["lookahead_client_near_misses_total"])
	assert.Positive(t, values["lookahead_client_near_objects"])
}
