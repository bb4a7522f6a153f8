package near

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/metrics"
	"github.com/lookahead-dev/lookahead/internal/metrics/wire"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/prefetch"
)

type fakeOrigin struct{}

func (fakeOrigin) BatchGet(_ context.Context, ids []string) ([]*graph.Object, []string, error) {
	return []*graph.Object{obj(ids[0], 1)}, ids[1:], nil
}

func (fakeOrigin) Expand(_ context.Context, roots []string, _ []*graph.Object, _ graph.Budget, fn func(int, []*graph.Object, []string) error) error {
	return fn(0, []*graph.Object{obj(roots[0], 1)}, nil)
}

func TestFetcherTellsTheHubOfEveryChangeAndClear(t *testing.T) {
	h := newHub(t, Config{})
	s := h.Subscribe(0, "")
	defer h.Unsubscribe(s)
	c, err := cache.New(cache.Config{}, wire.Cache(metrics.New(prometheus.NewRegistry())))
	require.NoError(t, err)
	defer c.Close()
	f, err := fetch.New(fetch.Config{}, fakeOrigin{}, c)
	require.NoError(t, err)
	nf := h.Fetcher(f)
	h.Track(s.ID, []string{"x", "y"})
	nf.Changed("x", 5, false)
	nf.Changed("y", 2, true)
	assert.Equal(t, []string{"invalidation x v5", "invalidation y v2"}, kinds(h.Take(s, 10)))
	nf.Changed("x", 6, false)
	nf.Clear()
	assert.Equal(t, []string{"flush  v0"}, kinds(h.Take(s, 10)), "the clear supersedes the queued invalidation")
}

func TestFetchingPushesWhatIsFetchedSpeculatively(t *testing.T) {
	h := newHub(t, Config{})
	s := h.Subscribe(1<<20, "")
	defer h.Unsubscribe(s)
	o := h.Fetching(fakeOrigin{})
	expand := func(ctx context.Context, root string) {
		require.NoError(t, o.Expand(ctx, []string{root}, nil, graph.Budget{}, func(int, []*graph.Object, []string) error { return nil }))
	}
	demand := context.Background()
	_, _, err := o.BatchGet(demand, []string{"a"})
	require.NoError(t, err)
	expand(demand, "b")
	assert.Empty(t, h.Take(s, 10), "a demand fetch is read by whoever asked, not pushed")

	spec := origin.Speculative(demand)
	found, missing, err := o.BatchGet(spec, []string{"c", "gone"})
	require.NoError(t, err)
	assert.Len(t, found, 1)
	assert.Equal(t, []string{"gone"}, missing)
	expand(spec, "d")
	evs := h.Take(s, 10)
	assert.Equal(t, []string{"push c v1", "push d v1"}, kinds(evs))
	assert.Equal(t, "prefetch", evs[0].Reason)
	assert.Equal(t, "expand", evs[1].Reason)
}

func TestFetchingPushesTheHeldObjectsASpeculativeExpandWalksThrough(t *testing.T) {
	h := newHub(t, Config{})
	s := h.Subscribe(1<<20, "")
	defer h.Unsubscribe(s)
	o := h.Fetching(fakeOrigin{})
	known := []*graph.Object{obj("k1", 2), obj("k2", 3)}
	none := func(int, []*graph.Object, []string) error { return nil }
	require.NoError(t, o.Expand(context.Background(), []string{"a"}, known, graph.Budget{}, none))
	assert.Empty(t, h.Take(s, 10), "a demand's held objects are not predictions")

	require.NoError(t, o.Expand(origin.Speculative(context.Background()), []string{"b"}, known, graph.Budget{}, none))
	evs := h.Take(s, 10)
	assert.Equal(t, []string{"push k1 v2", "push k2 v3", "push b v1"}, kinds(evs))
	assert.Equal(t, []string{"held", "held", "expand"}, []string{evs[0].Reason, evs[1].Reason, evs[2].Reason})
}

func TestFetchingPushesAJobsFetchesToItsReaders(t *testing.T) {
	h := newHub(t, Config{})
	a, b := h.Subscribe(1<<20, "a"), h.Subscribe(1<<20, "b")
	defer h.Unsubscribe(a)
	defer h.Unsubscribe(b)
	h.Track(a.ID, []string{"ra"})
	o := h.Fetching(fakeOrigin{})
	ctx := origin.Speculative(prefetch.WithFrom(context.Background(), []string{"ra"}))
	_, _, err := o.BatchGet(ctx, []string{"c"})
	require.NoError(t, err)
	require.NoError(t, o.Expand(ctx, []string{"d"}, []*graph.Object{obj("k", 1)}, graph.Budget{}, func(int, []*graph.Object, []string) error { return nil }))
	assert.Equal(t, []string{"push c v1", "push k v1", "push d v1"}, kinds(h.Take(a, 10)))
	assert.Empty(t, h.Take(b, 10), "b read nothing the job expands below")
}
