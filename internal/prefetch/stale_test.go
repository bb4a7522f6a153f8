package prefetch

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// failingOrigin fails every call while down is set.
type failingOrigin struct {
	*fakeOrigin
	mu   sync.Mutex
	down bool
}

func (f *failingOrigin) BatchGet(ctx context.Context, ids []string) ([]*graph.Object, []string, error) {
	f.mu.Lock()
	down := f.down
	f.mu.Unlock()
	if down {
		return nil, nil, errors.New("origin unavailable")
	}
	return f.fakeOrigin.BatchGet(ctx, ids)
}

func (f *failingOrigin) setDown(d bool) { f.mu.Lock(); f.down = d; f.mu.Unlock() }

func get(t *testing.T, e *engine, id string) (Result, error) {
	t.Helper()
	rs, _, err := e.Get(context.Background(), []string{id}, Hint{})
	if err != nil {
		return Result{}, err
	}
	require.Len(t, rs, 1)
	return rs[0], nil
}

func TestStaleWhileRevalidate(t *testing.T) {
	clk := &clock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	fo := newFakeOrigin([]*graph.Object{{ID: "a", Version: 1}})
	r := newRigWith(t, fo, Config{Mode: ModeOff}, fetch.Config{StaleWhileRevalidate: time.Minute}, Static{},
		cache.Config{TTL: time.Minute, StaleFor: time.Minute, Now: clk.Now})
	_, err := get(t, r.engine, "a")
	require.NoError(t, err)
	clk.Add(90 * time.Second)

	res, err := get(t, r.engine, "a")
	require.NoError(t, err)
	assert.True(t, res.Stale, "answered at once, marked stale")
	require.Eventually(t, func() bool { return fo.Calls() == 2 }, 5*time.Second, time.Millisecond, "refetched in the background")
	require.Eventually(t, func() bool {
		res, err := get(t, r.engine, "a")
		return err == nil && !res.Stale
	}, 5*time.Second, time.Millisecond, "fresh again once the refetch landed")
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.StaleServed.WithLabelValues("revalidate")))
}

func TestStaleIfError(t *testing.T) {
	clk := &clock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	fo := &failingOrigin{fakeOrigin: newFakeOrigin([]*graph.Object{{ID: "a", Version: 1}})}
	r := newRigWith(t, fo, Config{Mode: ModeOff}, fetch.Config{StaleIfError: time.Minute}, Static{},
		cache.Config{TTL: time.Minute, StaleFor: time.Minute, Now: clk.Now})
	_, err := get(t, r.engine, "a")
	require.NoError(t, err)
	clk.Add(90 * time.Second)

	res, err := get(t, r.engine, "a")
	require.NoError(t, err)
	assert.False(t, res.Stale, "origin up: refetched, fresh")
	assert.Equal(t, StatusMiss, res.Status)

	clk.Add(90 * time.Second)
	fo.setDown(true)
	res, err = get(t, r.engine, "a")
	require.NoError(t, err, "origin failing: the stale copy answers")
	assert.True(t, res.Stale)
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.StaleServed.WithLabelValues("error")))

	clk.Add(time.Minute)
	_, err = get(t, r.engine, "a")
	assert.Error(t, err, "past TTL + StaleFor nothing is left to answer")
}

func TestUntrustedCacheIsRevalidated(t *testing.T) {
	fo := &failingOrigin{fakeOrigin: newFakeOrigin([]*graph.Object{{ID: "a", Version: 1}})}
	var mu sync.Mutex
	trusted, beyond := true, time.Duration(0)
	trust := func() (bool, time.Duration) { mu.Lock(); defer mu.Unlock(); return trusted, beyond }
	r := newRigWith(t, fo, Config{Mode: ModeOff}, fetch.Config{StaleIfError: 10 * time.Second, Trust: trust}, Static{}, cache.Config{})
	_, err := get(t, r.engine, "a")
	require.NoError(t, err)
	res, err := get(t, r.engine, "a")
	require.NoError(t, err)
	require.Equal(t, StatusHit, res.Status)

	mu.Lock()
	trusted, beyond = false, 5*time.Second // change stream down past its grace
	mu.Unlock()
	res, err = get(t, r.engine, "a")
	require.NoError(t, err)
	assert.Equal(t, StatusMiss, res.Status, "an unverifiable copy is refetched, not served")
	assert.Equal(t, 2, fo.Calls())

	fo.setDown(true)
	res, err = get(t, r.engine, "a")
	require.NoError(t, err)
	assert.True(t, res.Stale, "within stale-if-error of the grace: served stale when the origin fails")

	mu.Lock()
	beyond = time.Minute
	mu.Unlock()
	_, err = get(t, r.engine, "a")
	assert.Error(t, err, "unverifiable for too long: not served")
}

func TestChangeDetachesFetchInFlight(t *testing.T) {
	fo := newFakeOrigin([]*graph.Object{{ID: "a", Version: 1}})
	fo.Block["a"] = true
	r := newRig(t, fo, Config{Mode: ModeOff}, Static{}, cache.Config{})
	first := make(chan Result)
	go func() {
		res, err := get(t, r.engine, "a")
		assert.NoError(t, err)
		first <- res
	}()
	<-fo.Started // the fetch read version 1 and is on its way back
	r.engine.f.Changed("a", 2, false)
	fo.Set(&graph.Object{ID: "a", Version: 2})
	fo.Unblock("a")

	res, err := get(t, r.engine, "a")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), res.Object.Version, "a request after the change does not join the older fetch")
	close(fo.Release)
	assert.Equal(t, uint64(1), (<-first).Object.Version, "the request from before the change gets what it read")
	res, err = get(t, r.engine, "a")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), res.Object.Version, "the older copy was not cached over the newer")
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.StaleFills))
}
