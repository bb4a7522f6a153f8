package lookahead_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"

	"github.com/lookahead-dev/lookahead"
)

func dial(t *testing.T, addr string, opts ...lookahead.Option) *lookahead.Client {
	t.Helper()
	c, err := lookahead.Dial(addr, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestGetReportsWhereTheAnswerCameFrom(t *testing.T) {
	c := dial(t, sidecarAddr)
	ctx := context.Background()
	_, err := c.Invalidate(ctx, "task-0.4")
	require.NoError(t, err)
	obj, st, err := c.Get(ctx, "task-0.4", &lookahead.Prefetch{Depth: lookahead.Uint32(0)})
	require.NoError(t, err)
	assert.Equal(t, "task-0.4", obj.GetId())
	assert.Equal(t, lookaheadv1.CacheStatus_CACHE_STATUS_MISS, st.Cache)
	assert.False(t, st.Near)
	_, st, err = c.Get(ctx, "task-0.4", nil)
	require.NoError(t, err)
	assert.Equal(t, lookaheadv1.CacheStatus_CACHE_STATUS_HIT, st.Cache)
	n, err := c.Invalidate(ctx, "task-0.4", "never-cached")
	require.NoError(t, err)
	assert.Equal(t, 1, n, "only the cached id counts")
}

func TestBadInputIsRefusedWithItsCode(t *testing.T) {
	c := dial(t, sidecarAddr)
	ctx := context.Background()
	_, _, err := c.Get(ctx, "", nil)
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	_, err = c.Put(ctx, nil)
	assert.ErrorContains(t, err, "nil object")
	_, err = c.GetGraph(ctx, lookahead.Graph{}, func(lookahead.Result) error { return nil })
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	s := c.StreamGraph(ctx, lookahead.Graph{Roots: []string{"task-0"}, Depth: lookahead.Uint32(99)})
	assert.False(t, s.Next())
	assert.Equal(t, codes.InvalidArgument, status.Code(s.Err()))
}

func TestGetGraphStopsOnTheCallbacksError(t *testing.T) {
	c := dial(t, sidecarAddr)
	stop := errors.New("enough")
	seen := 0
	_, err := c.GetGraph(context.Background(), lookahead.Graph{Roots: []string{"task-1"}}, func(lookahead.Result) error {
		seen++
		if seen == 3 {
			return stop
		}
		return nil
	})
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, 3, seen)
}

func TestGraphStreamListsMissingIDs(t *testing.T) {
	c := dial(t, sidecarAddr)
	s := c.StreamGraph(context.Background(), lookahead.Graph{Roots: []string{"task-2", "absent"}, Depth: lookahead.Uint32(1)})
	defer s.Close()
	n := 0
	for s.Next() {
		n++
	}
	require.NoError(t, s.Err())
	assert.Equal(t, 6, n)
	assert.Equal(t, []string{"absent"}, s.Missing())
}

func TestWritesWithExpectedVersions(t *testing.T) {
	c := dial(t, sidecarAddr)
	ctx := context.Background()
	obj, _, err := c.Get(ctx, "task-2.2", nil)
	require.NoError(t, err)
	v, err := c.Put(ctx, &lookaheadv1.Object{Id: "task-2.2", Type: "Task", Refs: obj.GetRefs(), Payload: []byte("x")}, lookahead.IfVersion(obj.GetVersion()))
	require.NoError(t, err)
	assert.Equal(t, obj.GetVersion()+1, v)
	_, err = c.Put(ctx, &lookaheadv1.Object{Id: "task-2.2", Type: "Task"}, lookahead.IfVersion(obj.GetVersion()))
	assert.Equal(t, codes.FailedPrecondition, status.Code(err), "a stale expected version")
	got, _, err := c.Get(ctx, "task-2.2", nil)
	require.NoError(t, err)
	assert.Equal(t, v, got.GetVersion(), "read your write")
	assert.Equal(t, codes.FailedPrecondition, status.Code(c.Delete(ctx, "task-2.2", lookahead.IfVersion(v+5))))
	got, _, err = c.Get(ctx, "task-2.2", nil)
	require.NoError(t, err, "a refused delete deleted nothing")
	assert.Equal(t, v, got.GetVersion())
}

// The stale flag reaches the caller: a sidecar with a tiny TTL and
// stale-while-revalidate answers an expired copy marked stale.
func TestStaleIsSurfaced(t *testing.T) {
	origin, err := startOrigin(filepath.Join(t.TempDir(), "o"))
	require.NoError(t, err)
	defer origin.Stop(10 * time.Second)
	sc, err := startSidecar(origin.GRPC, "--ttl", "1ms", "--stale-while-revalidate", "1h", "--prefetch-mode", "off")
	require.NoError(t, err)
	defer sc.Stop(10 * time.Second)
	c := dial(t, sc.GRPC)
	ctx := context.Background()
	_, st, err := c.Get(ctx, "task-0", nil)
	require.NoError(t, err)
	require.False(t, st.Stale)
	require.Eventually(t, func() bool {
		rs, _, err := c.BatchGet(ctx, []string{"task-0"}, nil)
		return err == nil && len(rs) == 1 && rs[0].Stale
	}, 10*time.Second, 5*time.Millisecond, "an expired copy is answered stale")
}
