package fetch

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch/fetchtest"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/origin"
)

// A write-side event that arrives while a fetch of the id is in flight must
// detach it: a request after the event never joins it, and what it read is
// not cached. Deletes and Invalidates carry no version, so only the order of
// events can tell the fetch's copy is old.
func TestWriteDetachesFetchInFlight(t *testing.T) {
	tests := []struct {
		name    string
		deleted bool // a Delete (the origin loses the object) or an Invalidate
	}{
		{name: "delete", deleted: true},
		{name: "invalidate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fo := fetchtest.NewOrigin([]*graph.Object{{ID: "a", Version: 1}})
			fo.Block["a"] = true
			r := newRig(t, fo, Config{}, cache.Config{})
			first := make(chan *Result)
			go func() {
				res, err := r.get(t, "a")
				assert.NoError(t, err)
				first <- res
			}()
			<-fo.Started // the fetch read version 1 and is on its way back
			if tt.deleted {
				fo.Remove("a")
			}
			r.f.Changed("a", 0, tt.deleted)
			fo.Unblock("a")

			after := make(chan *Result, 1)
			go func() {
				res, err := r.get(t, "a")
				assert.NoError(t, err)
				after <- res
			}()
			var res *Result
			select {
			case res = <-after:
			case <-time.After(10 * time.Second):
				close(fo.Release)
				t.Fatal("the Get after the event waited for the fetch from before it")
			}
			if tt.deleted {
				assert.Nil(t, res, "a Get after the Delete does not join the fetch from before it")
			} else {
				require.NotNil(t, res)
				assert.Equal(t, StatusMiss, res.Status, "a Get after the Invalidate fetches anew")
			}
			close(fo.Release)
			old := <-first
			require.NotNil(t, old, "the request from before the event gets what it read")
			assert.Equal(t, uint64(1), old.Object.Version)
			_, known := r.c.Peek("a")
			if tt.deleted {
				o, _ := r.c.Peek("a")
				assert.Nil(t, o, "the deleted object was not cached by the fetch from before")
			} else {
				assert.True(t, known)
			}
			assert.Equal(t, 2, fo.Calls(), "the fetch from before and the one after the event: nothing joined")
		})
	}
}

// A Clear (the origin's dataset changed) forgets fetches in flight and
// refuses what they bring.
func TestClearRefusesFetchesFromBefore(t *testing.T) {
	fo := fetchtest.NewOrigin([]*graph.Object{{ID: "a", Version: 1}})
	fo.Block["a"] = true
	r := newRig(t, fo, Config{}, cache.Config{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := r.get(t, "a")
		assert.NoError(t, err)
	}()
	<-fo.Started
	r.f.Clear()
	close(fo.Release)
	<-done
	_, known := r.c.Peek("a")
	assert.False(t, known, "read from the old dataset: not cached")
}

// The origin announced version 5 (a Watch change), then keeps answering
// version 1: the answer is never served as fresh.
func TestOlderThanAnnouncedIsNotFresh(t *testing.T) {
	for _, staleOK := range []bool{false, true} {
		t.Run(map[bool]string{false: "stale answers off", true: "stale-if-error on"}[staleOK], func(t *testing.T) {
			fo := fetchtest.NewOrigin([]*graph.Object{{ID: "a", Version: 1}})
			cfg := Config{}
			if staleOK {
				cfg.StaleIfError = time.Minute
			}
			r := newRig(t, fo, cfg, cache.Config{})
			r.f.Changed("a", 5, false)
			res, err := r.get(t, "a")
			assert.Equal(t, 2, fo.Calls(), "asked once more before giving up")
			if !staleOK {
				require.ErrorIs(t, err, ErrOlderThanAnnounced)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, res)
			assert.True(t, res.Stale, "answered, marked stale")
			assert.Equal(t, 1.0, testutil.ToFloat64(r.m.StaleServed.WithLabelValues("older")))
			fo.Set(&graph.Object{ID: "a", Version: 5})
			res, err = r.get(t, "a")
			require.NoError(t, err)
			assert.False(t, res.Stale, "the origin caught up")
			assert.Equal(t, uint64(5), res.Object.Version)
		})
	}
}

// Concurrent requests' misses gather: while the demand slots are busy, the
// misses that arrive wait in one batch that leaves when a slot frees.
func TestConcurrentMissesGatherIntoFewBatches(t *testing.T) {
	const n = 100
	var objs []*graph.Object
	fo := fetchtest.NewOrigin(nil)
	for i := range n {
		o := &graph.Object{ID: "o" + itoa(i), Version: 1}
		objs = append(objs, o)
		fo.Set(o)
		fo.Block[o.ID] = true
	}
	r := newRig(t, fo, Config{DemandBatches: 4}, cache.Config{})
	errs := make(chan error, n)
	for _, o := range objs {
		go func() {
			res, err := r.get(t, o.ID)
			if err == nil && (res == nil || res.Object.ID != o.ID) {
				t.Errorf("%s: got %v", o.ID, res)
			}
			errs <- err
		}()
	}
	for range 4 {
		<-fo.Started // every slot is at the origin
	}
	// The other 96 gather: one owns the gathering batch, 95 joined it.
	require.Eventually(t, func() bool { return testutil.ToFloat64(r.m.Joined) == n-5 }, 10*time.Second, time.Millisecond)
	close(fo.Release)
	for range n {
		require.NoError(t, <-errs)
	}
	assert.LessOrEqual(t, fo.Calls(), 10)
	assert.Equal(t, 5, fo.Calls(), "four at once, then one with all the rest")

	// A lone miss leaves at once, alone.
	fo.Set(&graph.Object{ID: "lone"})
	_, err := r.get(t, "lone")
	require.NoError(t, err)
	assert.Equal(t, []string{"lone"}, fo.AskedIDs()[fo.Calls()-1])
}

// A gathering request that gives up leaves the others to fetch for
// themselves.
func TestGatheringOwnerCancelled(t *testing.T) {
	fo := fetchtest.NewOrigin([]*graph.Object{{ID: "busy"}, {ID: "a"}, {ID: "b"}})
	fo.Block["busy"] = true
	r := newRig(t, fo, Config{DemandBatches: 1}, cache.Config{})
	go func() { _, _ = r.get(t, "busy") }()
	<-fo.Started // the only slot is taken
	ctx, cancel := context.WithCancel(context.Background())
	owner := make(chan error, 1)
	go func() {
		_, err := r.f.Get(ctx, []string{"a"})
		owner <- err
	}()
	require.Eventually(t, func() bool {
		r.f.flights.mu.Lock()
		defer r.f.flights.mu.Unlock()
		return r.f.flights.gathering != nil
	}, 10*time.Second, time.Millisecond)
	joiner := make(chan error, 1)
	go func() {
		_, err := r.f.Get(context.Background(), []string{"a", "b"})
		joiner <- err
	}()
	require.Eventually(t, func() bool { return testutil.ToFloat64(r.m.Joined) == 2 }, 10*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-owner, context.Canceled)
	close(fo.Release)
	require.NoError(t, <-joiner, "the joiner fetched what the cancelled batch would have")
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// markingOrigin records whether each BatchGet was marked speculative.
type markingOrigin struct {
	*fetchtest.Origin
	mu     sync.Mutex
	marked map[string]bool
}

func (m *markingOrigin) BatchGet(ctx context.Context, ids []string) ([]*graph.Object, []string, error) {
	md, _ := metadata.FromOutgoingContext(ctx)
	m.mu.Lock()
	for _, id := range ids {
		m.marked[id] = len(md.Get(origin.SpeculativeKey)) > 0
	}
	m.mu.Unlock()
	return m.Origin.BatchGet(ctx, ids)
}

func TestSpeculativeCallsAreMarked(t *testing.T) {
	mo := &markingOrigin{Origin: fetchtest.NewOrigin([]*graph.Object{{ID: "d"}, {ID: "s"}}), marked: map[string]bool{}}
	r := newRig(t, mo, Config{Speculative: origin.Speculative}, cache.Config{})
	_, err := r.get(t, "d")
	require.NoError(t, err)
	_, err = r.f.Speculate(context.Background(), []string{"s"})
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"d": false, "s": true}, mo.marked, "only speculation carries the mark")
}
