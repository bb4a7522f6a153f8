package near

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

type fakeCache struct {
	changes []string
	cleared int
}

func (f *fakeCache) InvalidateVersion(id string, _ uint64, _ bool) bool {
	f.changes = append(f.changes, id)
	return true
}
func (f *fakeCache) Clear() { f.cleared++ }

type fakeOrigin struct{}

func (fakeOrigin) BatchGet(_ context.Context, ids []string) ([]*graph.Object, []string, error) {
	return []*graph.Object{obj(ids[0], 1)}, ids[1:], nil
}

func (fakeOrigin) Expand(_ context.Context, roots []string, _ graph.Budget, fn func(int, []*graph.Object, []string) error) error {
	return fn(0, []*graph.Object{obj(roots[0], 1)}, nil)
}

func TestWatchingPassesChangesOnAndTellsTheHub(t *testing.T) {
	h := newHub(t, Config{})
	s := h.Subscribe(0, "")
	defer h.Unsubscribe(s)
	h.Track(s.ID, []string{"x"})
	c := &fakeCache{}
	w := h.Watching(c)
	assert.True(t, w.InvalidateVersion("x", 5, false))
	w.Clear()
	assert.Equal(t, []string{"x"}, c.changes)
	assert.Equal(t, 1, c.cleared)
	assert.Equal(t, []string{"flush  v0"}, kinds(h.Take(s, 10)), "the clear supersedes the queued invalidation")
}

func TestFetchingOffersWhatTheOriginSent(t *testing.T) {
	h := newHub(t, Config{})
	s := h.Subscribe(1<<20, "")
	defer h.Unsubscribe(s)
	o := h.Fetching(fakeOrigin{})
	found, missing, err := o.BatchGet(context.Background(), []string{"a", "gone"})
	require.NoError(t, err)
	assert.Len(t, found, 1)
	assert.Equal(t, []string{"gone"}, missing)
	require.NoError(t, o.Expand(context.Background(), []string{"b"}, graph.Budget{}, func(int, []*graph.Object, []string) error { return nil }))
	evs := h.Take(s, 10)
	assert.Equal(t, []string{"push a v1", "push b v1"}, kinds(evs))
	assert.Equal(t, "fetch", evs[0].Reason)
	assert.Equal(t, "expand", evs[1].Reason)
}
