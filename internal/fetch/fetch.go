// Package fetch is the sidecar's demand path: the only code that turns "these
// ids are needed" into origin round trips, one fetch per id at a time.
package fetch

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// Origin is what the fetcher needs from an origin: one round trip for many ids.
type Origin interface {
	BatchGet(ctx context.Context, ids []string) (found []*graph.Object, missing []string, err error)
}

// Expander is an origin that can expand a subgraph server-side in one round
// trip. Expand returns an error matching errors.ErrUnsupported when the origin
// does not implement it; the fetcher then stops asking.
type Expander interface {
	Expand(ctx context.Context, roots []string, known []*graph.Object, b graph.Budget, fn func(level int, objs []*graph.Object, missing []string) error) error
}

// Metrics receives the fetcher's counts; metrics.Set's FetchMetrics
// satisfies it. Nil counts nothing.
type Metrics interface {
	Fetched(speculative bool, objects int, bytes int64) // filled from the origin
	Joined(ids int, late bool)                          // demanded ids that waited for a fetch in flight; late: a speculative one
	StaleServed(reason string, ids int)                 // "revalidate", "error" or "older"
	Dropped(objects int)                                // objects an Expand stream sent that its walk did not ask for
}

// ErrOlderThanAnnounced is returned when the origin keeps answering an
// object older than a version it announced, and stale answers are off.
var ErrOlderThanAnnounced = errors.New("fetch: origin answered a version older than one it announced")

// Config tunes a Fetcher. Zero values take the documented defaults.
type Config struct {
	BatchSize int // ids per origin BatchGet (Oracle's row prefetch); default 256
	// DemandBatches is how many demand BatchGets may be in flight at once;
	// beyond it, misses of concurrent requests gather into one batch that
	// leaves when a slot frees; default 4.
	DemandBatches int
	DisableExpand bool // never use the origin's Expand, even when it has one

	// StaleWhileRevalidate: a cached object stale for at most this long is
	// answered at once, marked stale, and listed for refetching.
	StaleWhileRevalidate time.Duration
	// StaleIfError: a cached object stale for at most this long is refetched
	// first, and answered stale only if the origin fails.
	StaleIfError time.Duration
	// Trust says whether cached objects can be answered as fresh, and if not
	// for how long they have been unverifiable (the origin's change stream is
	// down); nil always trusts. Untrusted objects are treated as stale.
	Trust func() (trusted bool, beyond time.Duration)

	// Speculative marks the context of an origin call no application waits
	// on (origin.Speculative: gRPC metadata an origin may shed under load);
	// nil marks nothing.
	Speculative func(context.Context) context.Context

	Metrics Metrics // nil counts nothing
}

func (c *Config) setDefaults() {
	if c.BatchSize == 0 {
		c.BatchSize = 256
	}
	if c.DemandBatches == 0 {
		c.DemandBatches = 4
	}
	if c.Metrics == nil {
		c.Metrics = nopMetrics{}
	}
	if c.Speculative == nil {
		c.Speculative = func(ctx context.Context) context.Context { return ctx }
	}
}

// Validate reports every broken rule of c, its zero values read as the
// defaults, as New would: for commands that check settings before starting.
func (c Config) Validate() error {
	c.setDefaults()
	return c.validate()
}

func (c Config) validate() error {
	var errs []error
	if c.BatchSize < 1 {
		errs = append(errs, fmt.Errorf("batch size %d: must be at least 1", c.BatchSize))
	}
	if c.DemandBatches < 1 {
		errs = append(errs, fmt.Errorf("demand batches %d: must be at least 1", c.DemandBatches))
	}
	if c.StaleWhileRevalidate < 0 || c.StaleIfError < 0 {
		errs = append(errs, errors.New("stale-while-revalidate and stale-if-error must not be negative"))
	}
	return errors.Join(errs...)
}

// Status says how an object of an answer was obtained.
type Status int

// Statuses.
const (
	StatusMiss          Status = iota + 1 // fetched from the origin for this request
	StatusHit                             // main tier
	StatusHitPrefetched                   // prefetch tier: speculation paid off
	StatusJoined                          // waited for a fetch already in flight
)

// Result is one object of an answer.
type Result struct {
	Object *graph.Object
	Status Status
	Level  int  // distance from the nearest root (Walk only)
	Stale  bool // answered from a copy past its TTL, unverifiable, or older than announced
	// Speculative: a joined fetch was a prefetch (the prefetch was late).
	Speculative bool
}

// Answer is what Get found for a request.
type Answer struct {
	Results []Result // in the order of the request's ids, duplicates removed
	Missing []string // ids that do not exist
	// Revalidate lists ids answered stale that should be refetched in the
	// background (stale-while-revalidate).
	Revalidate []string
	// Began is when the request's lookup found ids to fetch: a miss could
	// join no fetch that started after it. Zero when it found none (or
	// unknown).
	Began time.Time
}

// Fetcher answers demands from the cache and the origin. Its methods are
// safe for concurrent use; it starts goroutines only for the duration of a
// call, so it has nothing to close.
type Fetcher struct {
	cfg       Config
	origin    Origin
	expander  Expander // nil when the origin cannot expand
	cache     *cache.Cache
	flights   *flights
	noExpand  atomic.Bool                                     // set once the origin answered UNIMPLEMENTED
	caughtUp  atomic.Pointer[func(context.Context, []string)] // see OnCaughtUp
	admission atomic.Pointer[Admission]                       // see SetAdmission

	// fetchedBytes and fetchedObjects total every object filled from the
	// origin: their ratio is the mean object size.
	fetchedBytes, fetchedObjects atomic.Int64
	// walkBytes totals the objects walks' Expands hold for their walks
	// (readAhead).
	walkBytes atomic.Int64
}

// New builds a fetcher. If o also implements Expander, expansions use it.
func New(cfg Config, o Origin, c *cache.Cache) (*Fetcher, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	f := &Fetcher{cfg: cfg, origin: o, cache: c, flights: newFlights(cfg.BatchSize, cfg.DemandBatches)}
	if x, ok := o.(Expander); ok && !cfg.DisableExpand {
		f.expander = x
	}
	return f, nil
}

// OnCaughtUp has fn told, before a demand waits, of the ids it found
// speculative fetches bringing or no fetch bringing at all, with the
// demand's context: the application has caught up with speculation, or
// overtaken it, which must reach further ahead to stay ahead of it. It is
// not told of ids another demand is bringing. fn runs on the demand's path
// and must not block.
func (f *Fetcher) OnCaughtUp(fn func(ctx context.Context, ids []string)) { f.caughtUp.Store(&fn) }

// CanExpand reports whether the origin has a server-side Expand to use.
func (f *Fetcher) CanExpand() bool { return f.expander != nil && !f.noExpand.Load() }

// BatchSize is the most ids one origin BatchGet carries.
func (f *Fetcher) BatchSize() int { return f.cfg.BatchSize }

// MeanObjectBytes is the mean size of the objects fetched so far; 0 before
// any.
func (f *Fetcher) MeanObjectBytes() int64 {
	n := f.fetchedObjects.Load()
	if n == 0 {
		return 0
	}
	return max(f.fetchedBytes.Load()/n, 1)
}

// Peek says what the cache holds for id, fresh, without counting (see
// cache.Peek): for planners walking through what is held.
func (f *Fetcher) Peek(id string) (*graph.Object, bool) { return f.cache.Peek(id) }

// trusted asks Config.Trust whether cached objects can be answered fresh.
func (f *Fetcher) trusted() (bool, time.Duration) {
	if f.cfg.Trust == nil {
		return true, 0
	}
	return f.cfg.Trust()
}

type nopMetrics struct{}

func (nopMetrics) Fetched(bool, int, int64) {}
func (nopMetrics) Joined(int, bool)         {}
func (nopMetrics) StaleServed(string, int)  {}
func (nopMetrics) Dropped(int)              {}
