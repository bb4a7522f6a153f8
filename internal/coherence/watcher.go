// Package coherence keeps the sidecar's cache in step with the origin's
// change stream and says when cached entries can no longer be trusted.
package coherence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lookahead-dev/lookahead/internal/origin"
)

// Source opens the origin's change stream after from (nil = from now). An
// origin without one answers with an error matching errors.ErrUnsupported.
type Source interface {
	Watch(ctx context.Context, from *uint64) (Stream, error)
}

// Stream is an open change stream.
type Stream interface {
	Start() uint64
	// DatasetID is the dataset the origin named with Start; empty = none.
	DatasetID() string
	Recv() ([]origin.Change, error)
}

// Describer is a Source that can also say which dataset it serves; the
// watcher asks it on every (re)connect when the stream names none.
type Describer interface {
	Describe(ctx context.Context) (origin.Description, error)
}

// Invalidator is what the watcher needs from the sidecar: fetch.Fetcher's
// Changed, the one entry of write-side events.
type Invalidator interface {
	Changed(id string, version uint64, deleted bool) bool
}

// FromClient adapts the origin client to a Source.
func FromClient(c *origin.Client) Source { return clientSource{c} }

type clientSource struct{ c *origin.Client }

func (s clientSource) Watch(ctx context.Context, from *uint64) (Stream, error) {
	return s.c.Watch(ctx, from)
}

func (s clientSource) Describe(ctx context.Context) (origin.Description, error) {
	return s.c.Describe(ctx)
}

// Config tunes the watcher. Zero values take the defaults.
type Config struct {
	// Grace is how long cached entries stay trusted after the stream breaks
	// (or, at start, before it is first established); default 5s.
	Grace time.Duration
	// MinBackoff and MaxBackoff bound the reconnect delay, which doubles
	// from MinBackoff with jitter; defaults 100ms and 5s.
	MinBackoff, MaxBackoff time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.Grace == 0 {
		c.Grace = 5 * time.Second
	}
	if c.MinBackoff == 0 {
		c.MinBackoff = 100 * time.Millisecond
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = 5 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Watcher applies the origin's changes to the cache: every change drops
// older cached copies and sets a version floor (cache.InvalidateVersion). It
// reconnects with backoff and resumes from the highest revision it applied,
// so a break loses nothing as long as the origin keeps its history. An
// origin whose revision went backwards, or that names another dataset
// (checked through Identity on every connect), resets the sidecar and is
// followed from its current revision.
type Watcher struct {
	cfg   Config
	src   Source
	cache Invalidator
	id    *Identity
	m     Metrics
	log   *slog.Logger

	// untrusted is when the stream last broke (or the watcher started), in
	// Unix nanoseconds; 0 while the stream is up or when the origin has no
	// Watch (trust then rests on TTLs alone). Every Get reads it: no lock.
	untrusted atomic.Int64

	mu         sync.Mutex         // guards the fields below
	rev        uint64             // highest revision applied (or announced): the resume point
	haveRev    bool               //
	cancel     context.CancelFunc // ends the running session; nil between sessions
	restarting bool               // the session was ended by restart
}

// Metrics are the watcher's collectors; wire.Coherence makes them from the
// sidecar's set for one route.
type Metrics struct {
	Connected         prometheus.Gauge   // streams up, over every origin
	RouteConnected    prometheus.Gauge   // 1 while this route's stream is up
	Reconnects        prometheus.Counter // streams opened again after a break
	Changes           prometheus.Counter // changes received
	MalformedRevision prometheus.Counter // a revision below one applied
}

// New makes a watcher that applies changes to c and checks the origin's
// dataset with id, which also resets the sidecar; Run runs it.
func New(cfg Config, src Source, c Invalidator, id *Identity, m Metrics, log *slog.Logger) *Watcher {
	cfg.setDefaults()
	w := &Watcher{cfg: cfg, src: src, cache: c, id: id, m: m, log: log}
	w.setUp(false)
	id.onChange(w.restart)
	return w
}

// restart drops the stream's position and ends the running session, so that
// Run follows the origin again from its current revision: the identity
// changed, and revisions of one dataset say nothing of another's.
func (w *Watcher) restart() {
	w.mu.Lock()
	w.haveRev = false
	w.restarting = true
	cancel := w.cancel
	w.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// takeRestart reports whether restart ended the last session, and forgets it.
func (w *Watcher) takeRestart() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.restarting
	w.restarting = false
	return r
}

// setUp records that the stream is up, or that it broke now.
func (w *Watcher) setUp(up bool) {
	if up {
		w.untrusted.Store(0)
	} else {
		w.untrusted.Store(w.cfg.Now().UnixNano())
	}
}

// Trust reports whether cached entries may be answered as fresh: while the
// stream is up, within Grace of it breaking, or always when the origin has
// no Watch. When not, beyond says for how long past the grace they have been
// unverifiable.
func (w *Watcher) Trust() (trusted bool, beyond time.Duration) {
	since := w.untrusted.Load()
	if since == 0 {
		return true, 0
	}
	down := w.cfg.Now().Sub(time.Unix(0, since))
	if down < w.cfg.Grace {
		return true, 0
	}
	return false, down - w.cfg.Grace
}

// Revision is the highest revision applied: where a new stream resumes.
func (w *Watcher) Revision() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rev
}

// Run follows the change stream until ctx ends, reconnecting after breaks.
// It returns nil when ctx ends or the origin has no Watch.
func (w *Watcher) Run(ctx context.Context) error {
	backoff := w.cfg.MinBackoff
	connects := 0
	for {
		established, err := w.session(ctx, connects > 0)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, errors.ErrUnsupported) {
			w.setUp(true) // for good: nothing will ever break
			w.log.Warn("origin has no Watch: cached objects are trusted until their TTL", "err", err)
			return nil
		}
		if established {
			connects++
			backoff = w.cfg.MinBackoff
		}
		if w.takeRestart() || errors.Is(err, errRestarted) {
			continue // resubscribe at once from the origin's new history
		}
		w.log.Warn("origin change stream broken; reconnecting", "err", err, "backoff", backoff)
		// Full jitter keeps a fleet of sidecars from reconnecting in step.
		d := backoff/2 + rand.N(backoff/2+1)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		backoff = min(2*backoff, w.cfg.MaxBackoff)
	}
}

var errRestarted = errors.New("coherence: origin history restarted")

// session runs one stream until it breaks; established says whether it got
// as far as the origin's start revision.
func (w *Watcher) session(ctx context.Context, reconnect bool) (established bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w.mu.Lock()
	w.cancel, w.restarting = cancel, false
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.cancel = nil
		w.mu.Unlock()
	}()
	st, err := w.src.Watch(ctx, w.resumeFrom())
	if errors.Is(err, origin.ErrCompacted) {
		return true, w.forget(err)
	}
	if err != nil {
		return false, err
	}
	if w.checkIdentity(ctx, st) {
		return true, errRestarted // restart has reset the position
	}
	if err := w.takePosition(st); err != nil {
		return true, err
	}
	w.setUp(true)
	w.m.Connected.Inc() // the number of origins' streams up
	w.m.RouteConnected.Set(1)
	if reconnect {
		w.m.Reconnects.Inc()
	}
	defer func() {
		w.setUp(false)
		w.m.Connected.Dec()
		w.m.RouteConnected.Set(0)
	}()
	for {
		changes, err := st.Recv()
		if errors.Is(err, origin.ErrCompacted) {
			return true, w.forget(err)
		}
		if err != nil {
			return true, fmt.Errorf("change stream: %w", err)
		}
		w.apply(changes)
	}
}

// takePosition makes a newly opened stream's start the position to resume
// from, unless the stream belongs to a dataset a probe has already left, or
// starts before the position (another history): then errRestarted.
func (w *Watcher) takePosition(st Stream) error {
	w.mu.Lock()
	if w.restarting {
		// A probe saw another dataset while this stream opened: its start
		// belongs to the dataset before, and must not become the position.
		w.mu.Unlock()
		return errRestarted
	}
	if w.haveRev && st.Start() < w.rev {
		// The origin's history is not the one we followed: nothing cached can
		// be checked against it. Start over from its revision.
		w.rev = st.Start()
		w.mu.Unlock()
		w.id.reset.Reset("origin revision went backwards")
		w.log.Warn("origin revision went backwards: cache cleared", "start", st.Start())
		return errRestarted
	}
	if !w.haveRev {
		w.rev, w.haveRev = st.Start(), true
	}
	w.mu.Unlock()
	return nil
}

// resumeFrom is the revision to resume the stream from: the highest
// applied, or nil before any.
func (w *Watcher) resumeFrom() *uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.haveRev {
		return nil
	}
	r := w.rev
	return &r
}

// forget handles a resume point the origin no longer keeps: what changed
// since is unknown, so the cache is cleared, as when the revision goes
// backwards, and the next session starts from the origin's current revision.
func (w *Watcher) forget(err error) error {
	w.mu.Lock()
	w.haveRev = false
	w.mu.Unlock()
	w.id.reset.Reset("origin compacted the changes after the resume revision")
	w.log.Warn("origin no longer keeps the changes after the resume revision: cache cleared", "err", err)
	return errRestarted
}

// apply invalidates what changes announce and moves the resume point to the
// highest revision seen. A change below a revision already applied breaks
// the origin's promise of revision order: it is counted as malformed and
// never lowers the resume point (resuming from it would replay history
// for nothing, or from a point the origin no longer keeps), but it is still
// applied, since dropping an older copy is always safe.
func (w *Watcher) apply(changes []origin.Change) {
	if len(changes) == 0 {
		return
	}
	for _, c := range changes {
		w.cache.Changed(c.ID, c.Version, c.Deleted)
	}
	w.m.Changes.Add(float64(len(changes)))
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range changes {
		if c.Revision < w.rev {
			w.m.MalformedRevision.Inc()
			continue
		}
		w.rev = c.Revision
	}
}

// checkIdentity reports to Identity the dataset a new stream belongs to: the
// one its header names, else the one Describe names. It reports whether the
// identity changed.
func (w *Watcher) checkIdentity(ctx context.Context, st Stream) bool {
	if ds := st.DatasetID(); ds != "" {
		return w.id.Observe(ds, "watch")
	}
	d, ok := w.src.(Describer)
	if !ok {
		return false
	}
	desc, err := d.Describe(ctx)
	if err != nil {
		return false // no identity, or none now: the health probe asks again
	}
	return w.id.Observe(desc.DatasetID, "watch")
}
