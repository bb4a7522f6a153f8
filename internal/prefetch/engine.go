package prefetch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/metrics"
)

// Origin is what the engine needs from an origin: one round trip for many ids.
type Origin interface {
	BatchGet(ctx context.Context, ids []string) (found []*graph.Object, missing []string, err error)
}

// Expander is an origin that can expand a subgraph server-side in one round
// trip. Expand returns an error matching errors.ErrUnsupported when the origin
// does not implement it; the engine then falls back to level-by-level
// BatchGet and does not ask again.
type Expander interface {
	Expand(ctx context.Context, roots []string, b graph.Budget, fn func(level int, objs []*graph.Object, missing []string) error) error
}

// Mode selects whether the engine speculates.
type Mode string

// Modes.
const (
	ModeStatic   Mode = "static"   // expand below demanded objects with the planner's budget
	ModeAdaptive Mode = "adaptive" // the planner learns depth and fields (use NewAdaptive)
	ModeOff      Mode = "off"      // demand fetches only, hints included: an operator's kill switch
)

// Config tunes the engine. Zero values take the documented defaults.
type Config struct {
	Mode          Mode // default static
	Workers       int  // concurrent speculative origin requests (Knafla's support threads); default 4
	BatchSize     int  // ids per origin BatchGet (Oracle's row prefetch); default 256
	QueueSize     int  // speculative jobs waiting for a worker, newest run first; beyond it the oldest are dropped; default 1024
	DisableExpand bool // never use the origin's Expand, even when it has one

	// StaleWhileRevalidate: a cached object stale for at most this long is
	// answered at once, marked stale, and refetched in the background.
	StaleWhileRevalidate time.Duration
	// StaleIfError: a cached object stale for at most this long is refetched
	// first, and answered stale only if the origin fails.
	StaleIfError time.Duration
	// Trust says whether cached objects can be answered as fresh, and if not
	// for how long they have been unverifiable (the origin's change stream is
	// down); nil always trusts. Untrusted objects are treated as stale.
	Trust func() (trusted bool, beyond time.Duration)
}

func (c *Config) setDefaults() {
	if c.Mode == "" {
		c.Mode = ModeStatic
	}
	if c.Workers == 0 {
		c.Workers = 4
	}
	if c.BatchSize == 0 {
		c.BatchSize = 256
	}
	if c.QueueSize == 0 {
		c.QueueSize = 1024
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
	if c.Mode != ModeStatic && c.Mode != ModeAdaptive && c.Mode != ModeOff {
		errs = append(errs, fmt.Errorf("prefetch mode %q: want static, adaptive or off", c.Mode))
	}
	if c.Workers < 1 {
		errs = append(errs, fmt.Errorf("prefetch workers %d: must be at least 1", c.Workers))
	}
	if c.BatchSize < 1 {
		errs = append(errs, fmt.Errorf("batch size %d: must be at least 1", c.BatchSize))
	}
	if c.QueueSize < 1 {
		errs = append(errs, fmt.Errorf("prefetch queue size %d: must be at least 1", c.QueueSize))
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
	Level  int  // distance from the nearest root (Graph only)
	Stale  bool // answered from a copy past its TTL or unverifiable
}

// job is speculative work: expand below roots, or refresh stale ids.
type job struct {
	roots   []*graph.Object
	budget  graph.Budget
	refresh []string
	capped  bool // budget.MaxObjects is tierCap's, lower than the planner's
}

// Engine answers demands from the cache and the origin and expands what it
// fetched speculatively in the background. Demand fetches never wait for a
// speculative worker: they run on the caller's goroutine and bypass the
// worker limit. Speculative work is a bounded queue of jobs, newest first,
// drained by Workers goroutines, all stopped by Close.
type Engine struct {
	cfg      Config
	origin   Origin
	expander Expander // nil when the origin cannot expand
	cache    *cache.Cache
	planner  Planner
	observer Observer // nil when the planner does not learn
	m        *metrics.Set

	flights  inflight
	noExpand atomic.Bool // set once the origin answered UNIMPLEMENTED

	// fetchedBytes and fetchedObjects total every object filled from the
	// origin: their ratio is the mean object size that tierCap uses.
	fetchedBytes, fetchedObjects atomic.Int64

	jobs *queue
	sem  chan struct{} // one slot per concurrent speculative origin request

	ctx       context.Context // cancelled by Close; speculative work runs under it
	cancel    context.CancelFunc
	wg        sync.WaitGroup // the workers
	closeOnce sync.Once
}

// New starts an engine with cfg.Workers speculative workers; Close stops them.
// If o also implements Expander, expansions use it.
func New(cfg Config, o Origin, c *cache.Cache, p Planner, m *metrics.Set) (*Engine, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{
		cfg: cfg, origin: o, cache: c, planner: p, m: m,
		jobs: newQueue(cfg.QueueSize),
		sem:  make(chan struct{}, cfg.Workers),
		ctx:  ctx, cancel: cancel,
	}
	if x, ok := o.(Expander); ok && !cfg.DisableExpand {
		e.expander = x
	}
	if obs, ok := p.(Observer); ok {
		e.observer = obs
	}
	if s, ok := p.(Static); ok && cfg.Mode == ModeStatic {
		m.PrefetchDepth.Set(float64(s.Depth))
	}
	for i := 0; i < cfg.Workers; i++ {
		e.wg.Add(1)
		go e.work()
	}
	return e, nil
}

// Close cancels outstanding speculative work and waits for the workers. It
// is idempotent.
func (e *Engine) Close() {
	e.closeOnce.Do(func() {
		e.cancel()
		e.wg.Wait()
	})
}

func (e *Engine) work() {
	defer e.wg.Done()
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-e.jobs.ready:
		}
		for e.ctx.Err() == nil {
			j, ok := e.jobs.pop()
			if !ok {
				break
			}
			if len(j.refresh) > 0 {
				_, _ = e.demand(e.ctx, j.refresh) // a failure leaves the stale copy
				continue
			}
			e.expand(j)
		}
	}
}

// enqueue queues speculative work; speculation never blocks a demand, so a
// full queue drops its oldest job instead (see queue), counted.
func (e *Engine) enqueue(j job) {
	if e.jobs.push(j) {
		e.m.PrefetchDropped.Inc()
	}
}

// Get answers ids from the cache, fetching all misses of the request in one
// round trip per BatchSize ids, and schedules the speculative expansion of
// what it fetched. Results keep the order of ids, duplicates removed.
func (e *Engine) Get(ctx context.Context, ids []string, h Hint) (results []Result, missing []string, err error) {
	var start time.Time
	if e.observer != nil { // only a learning planner needs the clock
		start = time.Now()
	}
	ids = dedupe(ids)
	byID := make(map[string]Result, len(ids))
	var need, refresh []string
	var follow []*graph.Object     // objects whose refs to expand speculatively
	var fallback map[string]Result // stale copies to answer if the origin fails
	trusted, beyond := e.trusted()
	for _, id := range ids {
		l, ok := e.cache.Get(id)
		stale, age := l.Stale, l.StaleFor
		if ok && !l.Negative && !trusted {
			stale, age = true, max(age, beyond)
		}
		switch {
		case !ok:
			need = append(need, id)
		case l.Negative:
		case stale && trusted && age <= e.cfg.StaleWhileRevalidate:
			byID[id] = Result{Object: l.Object, Status: StatusHit, Stale: true}
			e.m.StaleServed.WithLabelValues("revalidate").Inc()
			refresh = append(refresh, id)
		case stale:
			need = append(need, id)
			if age <= e.cfg.StaleIfError {
				if fallback == nil {
					fallback = make(map[string]Result)
				}
				fallback[id] = Result{Object: l.Object, Status: StatusHit, Stale: true}
			}
		case l.Tier == cache.TierPrefetch:
			byID[id] = Result{Object: l.Object, Status: StatusHitPrefetched}
			// A used prefetch moves the window: expand below it so that the
			// application's next step is already on its way (Knafla's POD).
			follow = append(follow, l.Object)
		default:
			byID[id] = Result{Object: l.Object, Status: StatusHit}
			if h.Depth != nil || h.MaxObjects != nil || len(h.Fields) > 0 {
				// A request that asks for a prefetch gets it, cached or not.
				follow = append(follow, l.Object)
			}
		}
	}
	if len(need) > 0 {
		got, err := e.demand(ctx, need)
		switch {
		case err != nil && len(fallback) == len(need) && ctx.Err() == nil:
			// stale-if-error: every id the origin failed to answer has a copy.
			for id, r := range fallback {
				byID[id] = r
			}
			e.m.StaleServed.WithLabelValues("error").Add(float64(len(fallback)))
		case err != nil:
			return nil, nil, err
		}
		for id, r := range got {
			byID[id] = r
			follow = append(follow, r.Object)
		}
	}
	if len(refresh) > 0 {
		e.enqueue(job{refresh: refresh})
	}
	results = make([]Result, 0, len(byID))
	usedPrefetch := 0
	for _, id := range ids {
		if r, ok := byID[id]; ok {
			results = append(results, r)
			if r.Status == StatusHitPrefetched || r.Status == StatusJoined {
				usedPrefetch++
			}
		} else {
			missing = append(missing, id)
		}
	}
	if e.observer != nil {
		objs := make([]*graph.Object, len(results))
		for i, r := range results {
			objs[i] = r.Object
		}
		e.observer.ObserveRequest(objs, start, time.Now())
		if usedPrefetch > 0 {
			e.observer.ObservePrefetch(0, usedPrefetch)
		}
	}
	e.schedule(follow, h)
	return results, missing, nil
}

// InvalidateVersion applies a change the origin announced (see
// cache.InvalidateVersion) and detaches any fetch of id in flight, so that no
// request arriving after the change waits for a copy read before it.
func (e *Engine) InvalidateVersion(id string, version uint64, deleted bool) bool {
	e.flights.forget(id)
	return e.cache.InvalidateVersion(id, version, deleted)
}

// Clear empties the cache, for an origin whose history restarted.
func (e *Engine) Clear() { e.cache.Clear() }

// trusted asks Config.Trust whether cached objects can be answered fresh.
func (e *Engine) trusted() (bool, time.Duration) {
	if e.cfg.Trust == nil {
		return true, 0
	}
	return e.cfg.Trust()
}

// schedule queues the speculative expansion below roots.
func (e *Engine) schedule(roots []*graph.Object, h Hint) {
	if len(roots) == 0 || e.cfg.Mode == ModeOff {
		return
	}
	b := e.planner.Budget(roots, h)
	if h.Depth == nil { // the planner's own depth, not a request's override
		e.m.PrefetchDepth.Set(float64(b.Depth))
	}
	if b.Depth <= 0 {
		return
	}
	j := job{roots: roots, budget: b}
	if c := e.tierCap(); c > 0 && (b.MaxObjects == 0 || b.MaxObjects > c) {
		j.budget.MaxObjects, j.capped = c, true
	}
	e.enqueue(j)
}

// expand runs one speculative job: walk below its roots through what is
// cached and fetch the rest, level by level, until the budget is spent.
func (e *Engine) expand(j job) {
	plan := NewPlan(j.roots, j.budget)
	var xs []*expansion // this job's Expand calls: what they brought stays visible to the plan
	have := func(id string) (*graph.Object, bool) {
		for _, x := range xs {
			if o, known := x.lookup(id); known {
				return o, true
			}
		}
		return e.cache.Peek(id)
	}
	for {
		if e.ctx.Err() != nil {
			return
		}
		st, ok := plan.Step(have)
		if !ok {
			if j.capped && plan.Remaining() == 0 {
				e.m.PrefetchClamped.Inc() // the tier's cap, not the planner's, ended it
			}
			return
		}
		var fetched []*graph.Object
		if len(st.Fetch) > 0 {
			var err error
			if j.budget.Depth-st.Level > 0 && e.canExpand() {
				x, joins := e.newExpansion(st.Fetch, e.subBudget(plan, st, j.budget), true)
				err = x.run(e.ctx)
				if errors.Is(err, errors.ErrUnsupported) {
					err = nil
				} else if err == nil {
					xs = append(xs, x)
					fetched, _ = x.delivered(st.Fetch)
					var more []*graph.Object
					more, err = joined(e.ctx, joins) // roots another fetch was bringing
					fetched = append(fetched, more...)
				}
			}
			if err == nil && fetched == nil { // no Expand: level by level
				fetched, err = e.speculate(st.Fetch)
			}
			if err != nil {
				return // origin trouble or shutdown: speculation just stops
			}
		}
		plan.Complete(fetched)
	}
}

// subBudget is the budget of an Expand call that continues plan from the
// level st: the remaining depth and objects, the same fields.
func (e *Engine) subBudget(plan *Plan, st Step, b graph.Budget) graph.Budget {
	sub := graph.Budget{Depth: b.Depth - st.Level, Fields: b.Fields}
	if r := plan.Remaining(); r >= 0 {
		sub.MaxObjects = r + len(st.Fetch)
	}
	return sub
}

// tierCap is how many objects one speculative job may fetch: as many as
// half the prefetch tier holds at the mean size of the objects fetched so
// far; 0 (no cap) before anything was fetched. Without it, a budget larger
// than the tier (a deep hint, many roots at once: db4o's "everything at
// once") evicts its own first objects before the application reaches them,
// and since the tier evicts the oldest unused first and a walk reads in the
// order the breadth-first prefetch arrived, those are exactly the objects
// it needs next. Half, so that the job the application's next request
// schedules still fits beside this one.
func (e *Engine) tierCap() int {
	n := e.fetchedObjects.Load()
	if n == 0 {
		return 0
	}
	mean := max(e.fetchedBytes.Load()/n, 1)
	return int(max(e.cache.PrefetchBytes()/2/mean, 1))
}

func (e *Engine) canExpand() bool { return e.expander != nil && !e.noExpand.Load() }

// fill stores what the origin sent and counts it by reason.
func (e *Engine) fill(objs []*graph.Object, missing []string, speculative bool) {
	reason := metrics.ReasonDemand
	if speculative {
		reason = metrics.ReasonPrefetch
	}
	var n int64
	for _, o := range objs {
		n += o.Size()
	}
	e.m.ObjectsFetched.WithLabelValues(reason).Add(float64(len(objs)))
	e.m.BytesFetched.WithLabelValues(reason).Add(float64(n))
	e.fetchedObjects.Add(int64(len(objs)))
	e.fetchedBytes.Add(n)
	if speculative {
		e.m.PrefetchIssued.Add(float64(len(objs)))
		if e.observer != nil {
			e.observer.ObservePrefetch(len(objs), 0)
		}
		e.cache.AddPrefetched(objs...)
	} else {
		e.cache.AddDemand(objs...)
	}
	e.cache.AddMissing(missing...)
}

// demand fetches ids an application is waiting for: all batches at once,
// on the caller's context, joining fetches already in flight.
func (e *Engine) demand(ctx context.Context, ids []string) (map[string]Result, error) {
	out := make(map[string]Result, len(ids))
	joins, own := e.flights.claim(ids, e.cfg.BatchSize, false)
	e.countJoins(joins)
	var wg sync.WaitGroup
	for _, b := range own {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.run(ctx, b, false)
		}()
	}
	wg.Wait()
	if err := collect(own, out); err != nil {
		return nil, err
	}
	retry, err := e.awaitJoins(ctx, joins, out)
	if err != nil || len(retry) == 0 {
		return out, err
	}
	// Another fetch may have claimed a retried id meanwhile (a prefetch
	// planning below the fetch that failed us): it already holds its worker
	// slot, so join it as before. Ids it does not bring either are fetched
	// regardless, outside the table, so that retries end.
	joins, own = e.flights.claim(retry, e.cfg.BatchSize, false)
	e.countJoins(joins)
	for _, b := range own {
		e.run(ctx, b, false)
	}
	if err := collect(own, out); err != nil {
		return nil, err
	}
	again, err := e.awaitJoins(ctx, joins, out)
	if err != nil || len(again) == 0 {
		return out, err
	}
	regardless := &batch{ids: again, call: &call{done: make(chan struct{})}}
	e.run(ctx, regardless, false)
	return out, collect([]*batch{regardless}, out)
}

// countJoins counts a demand's ids that wait for fetches already in flight,
// on arrival; a prefetch that a demand reached in flight was late.
func (e *Engine) countJoins(joins map[*call][]string) {
	for c, cids := range joins {
		e.m.Joined.Add(float64(len(cids)))
		if c.speculative {
			e.m.PrefetchLate.Add(float64(len(cids)))
		}
	}
}

// collect puts what a demand's own batches fetched into out, or returns the
// first batch's error.
func collect(own []*batch, out map[string]Result) error {
	for _, b := range own {
		if b.call.err != nil {
			return b.call.err
		}
		for id, o := range b.call.objs {
			out[id] = Result{Object: o, Status: StatusMiss}
		}
	}
	return nil
}

// awaitJoins waits for the fetches a demand joined and puts what they
// brought into out. It returns the ids to fetch again: all of a fetch that
// failed (perhaps only because its owner gave up; ours may still succeed),
// and those a partial one did not bring.
func (e *Engine) awaitJoins(ctx context.Context, joins map[*call][]string, out map[string]Result) (retry []string, err error) {
	for c, cids := range joins {
		select {
		case <-c.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if c.err != nil {
			retry = append(retry, cids...)
			continue
		}
		for _, id := range cids {
			o, ok := c.objs[id]
			if !ok {
				if c.partial {
					retry = append(retry, id)
				}
				continue
			}
			if c.speculative {
				e.cache.Promote(id)
			}
			out[id] = Result{Object: o, Status: StatusJoined}
		}
	}
	return retry, nil
}

// speculate fetches ids for a prefetch job: in batches, each waiting for a
// worker slot before it claims its ids, so that a demand never joins a fetch
// that is itself still queued behind speculation.
func (e *Engine) speculate(ids []string) ([]*graph.Object, error) {
	var (
		mu       sync.Mutex
		out      []*graph.Object
		firstErr error
		wg       sync.WaitGroup
	)
	for start := 0; start < len(ids); start += e.cfg.BatchSize {
		chunk := ids[start:min(start+e.cfg.BatchSize, len(ids))]
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case e.sem <- struct{}{}:
			case <-e.ctx.Done():
				return
			}
			defer func() { <-e.sem }()
			joins, own := e.flights.claim(chunk, e.cfg.BatchSize, true)
			var got []*graph.Object
			var err error
			for _, b := range own {
				e.run(e.ctx, b, true)
				if b.call.err != nil {
					err = b.call.err
				}
				for _, o := range b.call.objs {
					got = append(got, o)
				}
			}
			more, jerr := joined(e.ctx, joins)
			if jerr != nil {
				return // shutdown
			}
			got = append(got, more...)
			mu.Lock()
			out = append(out, got...)
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := e.ctx.Err(); err != nil {
		return nil, err
	}
	return out, firstErr
}

// joined waits for the fetches in flight that joins names and returns what
// they brought of the ids each was joined for.
func joined(ctx context.Context, joins map[*call][]string) ([]*graph.Object, error) {
	var out []*graph.Object
	for c, ids := range joins {
		select {
		case <-c.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		for _, id := range ids {
			if o, ok := c.objs[id]; ok {
				out = append(out, o)
			}
		}
	}
	return out, nil
}

// run performs one owned batch: ids cached since they were claimed are taken
// from the cache (a fetch that finished just before our claim filled it, see
// inflight.release), the rest cost one origin round trip. The cache is filled
// before the batch is released.
func (e *Engine) run(ctx context.Context, b *batch, speculative bool) {
	c := b.call
	c.objs = make(map[string]*graph.Object, len(b.ids))
	var ask []string
	trusted, _ := e.trusted()
	for _, id := range b.ids {
		o, known := e.cache.Peek(id)
		switch {
		case !trusted || !known:
			ask = append(ask, id)
		case o != nil:
			c.objs[id] = o
		} // known not to exist: absent from objs, as the origin would answer
	}
	if len(ask) > 0 {
		start := time.Now()
		found, missing, err := e.origin.BatchGet(ctx, ask)
		if err == nil {
			if e.observer != nil {
				e.observer.ObserveRoundTrip(time.Since(start))
			}
			e.fill(found, missing, speculative)
			for _, o := range found {
				c.objs[o.ID] = o
			}
		}
		c.err = err
	}
	e.flights.release(b)
}

// Graph walks the subgraph below roots breadth-first and hands each level to
// emit as soon as it is complete. Every object is demanded: cached ones are
// hits, the rest are fetched a level at a time (all batches of a level in
// parallel), or the whole remaining subgraph in one Expand round trip when
// the origin has it, whose levels are emitted as they arrive. It returns the
// ids that do not exist.
func (e *Engine) Graph(ctx context.Context, roots []string, b graph.Budget, emit func(level int, rs []Result) error) (missing []string, err error) {
	plan := NewPlanIDs(roots, b)
	status := make(map[string]Status)
	var x *expansion // the walk's Expand, running beside it
	var xLevel int   // the plan level of x's roots
	xctx, cancel := context.WithCancel(ctx)
	var xdone sync.WaitGroup
	defer func() { cancel(); xdone.Wait() }()
	have := func(id string) (*graph.Object, bool) {
		if x != nil {
			if o, known := x.lookup(id); known {
				return o, true
			}
		}
		l, ok := e.cache.Get(id)
		if !ok {
			return nil, false
		}
		if l.Negative {
			return nil, true
		}
		if trusted, _ := e.trusted(); l.Stale || !trusted {
			return nil, false // a walk is answered fresh: refetch
		}
		if x != nil {
			// The Expand may have delivered id between the first look and
			// the cache's answer: it records an object before filling the
			// cache with it, so asking again tells its own fetch (a miss of
			// this request) from a hit.
			if o, known := x.lookup(id); known {
				return o, true
			}
		}
		if l.Tier == cache.TierPrefetch {
			status[id] = StatusHitPrefetched
		} else {
			status[id] = StatusHit
		}
		return l.Object, true
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		st, ok := plan.Step(have)
		if !ok {
			// The Expand may still be reading its stream's end: let it finish
			// rather than cancel a round trip that succeeded.
			xdone.Wait()
			return plan.Missing(), nil
		}
		var fetched []*graph.Object
		if rest := st.Fetch; len(rest) > 0 {
			if x == nil && b.Depth-st.Level > 0 && e.canExpand() {
				// Roots another fetch is bringing are left to demand below.
				nx, _ := e.newExpansion(rest, e.subBudget(plan, st, b), false)
				x, xLevel = nx, st.Level
				xdone.Add(1)
				go func() {
					defer xdone.Done()
					_ = nx.run(xctx) // its error reaches the walk through await
				}()
			}
			if x != nil {
				switch err := x.await(ctx, st.Level-xLevel); {
				case errors.Is(err, errors.ErrUnsupported):
					x = nil
				case err != nil:
					return nil, err
				default:
					fetched, rest = x.delivered(rest)
				}
			}
			if len(rest) > 0 { // beyond the Expand's budget, or no Expand
				got, err := e.demand(ctx, rest)
				if err != nil {
					return nil, err
				}
				for id, r := range got {
					status[id] = r.Status
					fetched = append(fetched, r.Object)
				}
			}
		}
		objs := plan.Complete(fetched)
		rs := make([]Result, len(objs))
		for i, o := range objs {
			s, ok := status[o.ID]
			if !ok {
				s = StatusMiss
			}
			rs[i] = Result{Object: o, Status: s, Level: st.Level}
		}
		if err := emit(st.Level, rs); err != nil {
			return nil, err
		}
	}
}

func dedupe(ids []string) []string {
	seen := make(map[string]struct{}, len(ids))
	out := ids[:0:0]
	for _, id := range ids {
		if _, ok := seen[id]; !ok {
			seen[id] = struct{}{}
			out = append(out, id)
		}
	}
	return out
}
