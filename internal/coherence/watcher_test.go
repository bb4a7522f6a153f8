package coherence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lookahead-dev/lookahead/internal/metrics"
	"github.com/lookahead-dev/lookahead/internal/origin"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// script is a fake origin change stream: each Watch call takes the next
// session, which announces start and then delivers batches, then fails with
// err (or blocks until the watch's context ends when err is nil).
type session struct {
	start   uint64
	dataset string // named in the stream's header
	batches [][]origin.Change
	err     error
	openErr error
}

type fakeSource struct {
	mu       sync.Mutex
	sessions []session
	froms    []*uint64 // from of each Watch call
	done     chan struct{}
	opened   chan struct{} // when not nil, told of each stream opened
}

func (f *fakeSource) Watch(ctx context.Context, from *uint64) (Stream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.froms = append(f.froms, from)
	if len(f.sessions) == 0 {
		close(f.done) // script exhausted: the test may inspect
		<-ctx.Done()
		return nil, ctx.Err()
	}
	s := f.sessions[0]
	f.sessions = f.sessions[1:]
	if s.openErr != nil {
		return nil, s.openErr
	}
	if f.opened != nil {
		f.opened <- struct{}{}
	}
	return &fakeStream{ctx: ctx, s: s}, nil
}

type fakeStream struct {
	ctx context.Context
	s   session
}

func (f *fakeStream) Start() uint64 { return f.s.start }

func (f *fakeStream) DatasetID() string { return f.s.dataset }

func (f *fakeStream) Recv() ([]origin.Change, error) {
	if len(f.s.batches) > 0 {
		b := f.s.batches[0]
		f.s.batches = f.s.batches[1:]
		return b, nil
	}
	if f.s.err != nil {
		return nil, f.s.err
	}
	<-f.ctx.Done()
	return nil, f.ctx.Err()
}

type recorder struct {
	mu      sync.Mutex
	changes []origin.Change
	clears  int
}

func (r *recorder) Changed(id string, version uint64, deleted bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes = append(r.changes, origin.Change{ID: id, Version: version, Deleted: deleted})
	return true
}

func (r *recorder) Reset(string) { r.mu.Lock(); r.clears++; r.mu.Unlock() }

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// metricsOf is wire.Coherence, which this package's tests cannot import.
func metricsOf(m *metrics.Set) Metrics {
	return Metrics{
		Connected: m.WatchConnected, RouteConnected: m.WatchRouteConnected.WithLabelValues(metrics.DefaultRoute),
		Reconnects: m.WatchReconnects, Changes: m.WatchChanges,
		MalformedRevision: m.OriginMalformed.WithLabelValues(metrics.MalformedRevision),
	}
}

func newIdentity(r Resetter, m *metrics.Set) *Identity {
	return NewIdentity(r, m.OriginDatasetChanges.WithLabelValues("default"), discard)
}

func run(t *testing.T, sessions ...session) (*Watcher, *fakeSource, *recorder, *metrics.Set) {
	t.Helper()
	src := &fakeSource{sessions: sessions, done: make(chan struct{})}
	rec := &recorder{}
	m := metrics.New(prometheus.NewRegistry())
	w := New(Config{MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}, src, rec, newIdentity(rec, m), metricsOf(m), discard)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- w.Run(ctx) }()
	select {
	case <-src.done:
	case err := <-stopped: // Run ended by itself (unsupported origin)
		cancel()
		require.NoError(t, err)
		return w, src, rec, m
	}
	cancel()
	require.NoError(t, <-stopped)
	return w, src, rec, m
}

func ch(rev uint64, id string, v uint64, deleted bool) origin.Change {
	return origin.Change{Revision: rev, ID: id, Version: v, Deleted: deleted}
}

func TestAppliesChangesAndResumesAfterBreak(t *testing.T) {
	broken := errors.New("connection reset")
	w, src, rec, m := run(t,
		session{start: 10, batches: [][]origin.Change{{ch(11, "a", 2, false), ch(12, "b", 5, true)}}, err: broken},
		session{openErr: fmt.Errorf("dial: %w", broken)},
		session{start: 12, batches: [][]origin.Change{{ch(13, "a", 3, false)}}, err: broken},
	)
	assert.Equal(t, []origin.Change{{ID: "a", Version: 2}, {ID: "b", Version: 5, Deleted: true}, {ID: "a", Version: 3}}, rec.changes)
	require.Len(t, src.froms, 4)
	assert.Nil(t, src.froms[0], "first subscription: from now")
	assert.Equal(t, uint64(12), *src.froms[1], "resume after the last applied revision")
	assert.Equal(t, uint64(12), *src.froms[2])
	assert.Equal(t, uint64(13), *src.froms[3])
	assert.Equal(t, uint64(13), w.Revision())
	assert.Equal(t, 3.0, testutil.ToFloat64(m.WatchChanges))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.WatchReconnects))
	assert.Zero(t, rec.clears)
}

func TestRevisionGoingBackwardsClears(t *testing.T) {
	_, src, rec, _ := run(t,
		session{start: 50, err: errors.New("origin restarted")},
		session{start: 3, err: errors.New("never read")}, // a fresh store
		session{start: 3, batches: [][]origin.Change{{ch(4, "x", 1, false)}}, err: errors.New("bye")},
	)
	assert.Equal(t, 1, rec.clears)
	require.Len(t, src.froms, 4)
	assert.Equal(t, uint64(3), *src.froms[2], "resubscribed from the new history")
	assert.Equal(t, []origin.Change{{ID: "x", Version: 1}}, rec.changes)
}

func TestCompactedResumeClearsAndStartsOver(t *testing.T) {
	compacted := fmt.Errorf("origin watch: %w", origin.ErrCompacted)
	_, src, rec, _ := run(t,
		session{start: 10, batches: [][]origin.Change{{ch(11, "a", 2, false)}}, err: errors.New("connection reset")},
		session{start: 11, err: compacted}, // resuming from 11: the origin compacted past it
		session{start: 40, batches: [][]origin.Change{{ch(41, "b", 7, false)}}, err: errors.New("bye")},
		session{openErr: compacted}, // the same, told when the stream opens
		session{start: 50, err: errors.New("bye")},
	)
	assert.Equal(t, 2, rec.clears)
	require.Len(t, src.froms, 6)
	assert.Equal(t, uint64(11), *src.froms[1])
	assert.Nil(t, src.froms[2], "after a compacted resume: from the origin's current revision")
	assert.Equal(t, uint64(41), *src.froms[3])
	assert.Nil(t, src.froms[4], "compacted at open")
	assert.Equal(t, []origin.Change{{ID: "a", Version: 2}, {ID: "b", Version: 7}}, rec.changes)
}

func TestUnsupportedOriginIsTrusted(t *testing.T) {
	w, _, _, _ := run(t, session{openErr: fmt.Errorf("origin watch: %w", errors.ErrUnsupported)})
	trusted, _ := w.Trust()
	assert.True(t, trusted)
}

func TestTrustFollowsTheStreamAndGrace(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	m := metrics.New(prometheus.NewRegistry())
	w := New(Config{Grace: 5 * time.Second, Now: clock}, nil, nil, newIdentity(&recorder{}, m), metricsOf(m), slog.Default())
	trusted, _ := w.Trust()
	assert.True(t, trusted, "within the grace of starting")
	now = now.Add(8 * time.Second)
	trusted, beyond := w.Trust()
	assert.False(t, trusted, "never connected, grace over")
	assert.Equal(t, 3*time.Second, beyond)

	w.setUp(true)
	trusted, _ = w.Trust()
	assert.True(t, trusted, "stream up")

	w.setUp(false)
	now = now.Add(4 * time.Second)
	trusted, _ = w.Trust()
	assert.True(t, trusted, "broken, within grace")
	now = now.Add(2 * time.Second)
	trusted, beyond = w.Trust()
	assert.False(t, trusted)
	assert.Equal(t, time.Second, beyond)
}

func TestAnotherDatasetOnReconnectResetsAndFollowsFromNow(t *testing.T) {
	w, src, rec, m := run(t,
		session{start: 10, dataset: "A", batches: [][]origin.Change{{ch(11, "a", 2, false)}}, err: errors.New("origin restarted")},
		// Same revision, another dataset: the revision alone cannot tell.
		session{start: 11, dataset: "B", err: errors.New("never read")},
		session{start: 11, dataset: "B", batches: [][]origin.Change{{ch(12, "b", 1, false)}}, err: errors.New("bye")},
	)
	assert.Equal(t, 1, rec.clears)
	require.Len(t, src.froms, 4)
	assert.Equal(t, uint64(11), *src.froms[1], "resumed as usual")
	assert.Nil(t, src.froms[2], "the old position means nothing in the new dataset: from now")
	assert.Equal(t, uint64(12), *src.froms[3])
	assert.Equal(t, uint64(12), w.Revision())
	assert.Equal(t, 1.0, testutil.ToFloat64(m.OriginDatasetChanges.WithLabelValues("default")))
	assert.Equal(t, "B", w.id.Known())
}

func TestIdentityChangeSeenByAProbeRestartsTheStream(t *testing.T) {
	src := &fakeSource{done: make(chan struct{}), opened: make(chan struct{}), sessions: []session{
		{start: 7, dataset: "A"}, // blocks until ended
		{start: 3, dataset: "B", err: errors.New("bye")},
	}}
	rec := &recorder{}
	m := metrics.New(prometheus.NewRegistry())
	id := newIdentity(rec, m)
	w := New(Config{MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}, src, rec, id, metricsOf(m), discard)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- w.Run(ctx) }()
	<-src.opened
	// The stream has opened; its dataset is recorded just after.
	require.Eventually(t, func() bool { return id.Known() == "A" }, 10*time.Second, time.Millisecond)
	require.True(t, id.Observe("B", "describe"), "a probe sees the new dataset")
	<-src.opened
	<-src.done
	cancel()
	require.NoError(t, <-stopped)
	require.Len(t, src.froms, 3)
	assert.Nil(t, src.froms[1], "resubscribed from now, at once")
	assert.Equal(t, uint64(3), *src.froms[2])
	assert.Equal(t, 1, rec.clears)
	assert.Equal(t, 1.0, testutil.ToFloat64(m.WatchReconnects))
}

func TestResumesFromTheHighestRevision(t *testing.T) {
	broken := errors.New("connection reset")
	tests := []struct {
		name    string
		batches [][]origin.Change
	}{
		{name: "across messages", batches: [][]origin.Change{{ch(101, "a", 2, false)}, {ch(102, "b", 3, false)}, {ch(90, "c", 4, false)}}},
		{name: "within one message", batches: [][]origin.Change{{ch(101, "a", 2, false), ch(102, "b", 3, false), ch(90, "c", 4, false)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, src, rec, m := run(t,
				session{start: 100, batches: tt.batches, err: broken},
				session{start: 102, err: broken},
			)
			require.Len(t, src.froms, 3)
			assert.Equal(t, uint64(102), *src.froms[1], "resume after the highest revision applied, not the last received")
			assert.Equal(t, uint64(102), w.Revision())
			assert.Equal(t, 1.0, testutil.ToFloat64(m.OriginMalformed.WithLabelValues(metrics.MalformedRevision)), "the lower revision is counted")
			assert.Len(t, rec.changes, 3, "every change still drops older copies: invalidating is always safe")
			assert.Zero(t, rec.clears)
		})
	}
}
