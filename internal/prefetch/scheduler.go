// Package prefetch is the sidecar's speculation: after a demand, it plans
// what the application will read next and fetches it in the background,
// never in the way of a demand.
package prefetch

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// Fetcher is what the scheduler needs from the demand path (fetch.Fetcher).
type Fetcher interface {
	// Fetch refetches ids as a demand (stale copies being revalidated).
	Fetch(ctx context.Context, ids []string) ([]*graph.Object, error)
	// Speculate fetches ids into the prefetch tier.
	Speculate(ctx context.Context, ids []string) ([]*graph.Object, error)
	NewExpansion(roots []string, b graph.Budget, speculative bool) *fetch.Expansion
	NewExpansionAhead(roots []string, b graph.Budget) *fetch.Expansion
	Peek(id string) (*graph.Object, bool)
	CanExpand() bool
	BatchSize() int
	MeanObjectBytes() int64
}

// Metrics receives the scheduler's counts; metrics.Set's PrefetchMetrics
// satisfies it. Nil counts nothing.
type Metrics interface {
	Dropped()     // a speculative job dropped from a full queue
	Unlearned()   // a read not handed to the learner: its request ended while waiting for room (see choose)
	Clamped()     // a job the prefetch tier's cap stopped before its own budget
	Depth(d int)  // the planner's current depth
	Window(n int) // speculative origin calls the Window allows in flight now
	// RoundTrip is the demand round trip the chooser plans ahead with
	// (Window.RoundTrip); 0: none observed yet, nothing planned ahead.
	RoundTrip(d time.Duration)
	// Learning is the time the learner spent on one read: the chooser's
	// ReadAt and the job it queues (see learn). Choosing is the time a
	// chance job spent choosing what to fetch, less its waits for the
	// origin (see expandChances). Both are wall time, which on a busy
	// machine includes waits for a core and for the chooser's lock: an
	// upper bound of what speculation costs the cores it shares with the
	// application, against the round trips it saves.
	Learning(d time.Duration)
	Choosing(d time.Duration)
	Shed()       // a speculative origin call the origin refused RESOURCE_EXHAUSTED
	Preempted()  // a queued speculative job a demand miss overtook (see overtake)
	Cancelled()  // a running speculative job a demand miss overtook
	ClientGone() // a speculative job, queued or running, of a client that went (see Client)
}

// job is speculative work: expand below roots, or refresh stale ids.
type job struct {
	roots []*graph.Object
	// triggers are the objects of roots the request that scheduled the job
	// read, less those a demand miss has overtaken since (see overtake):
	// always among roots.
	triggers []*graph.Object
	budget   graph.Budget
	refresh  []string
	capped   bool     // budget.MaxObjects is tierCap's, lower than the planner's
	chance   bool     // expand by the chooser's probabilities, budget.MaxObjects objects at most
	client   *Client  // whom it was scheduled for; nil: nobody's (a refresh)
	ahead    []string // ids a demand caught up with speculation at (see CaughtUp)
	queued   time.Time
	bytes    int64 // what the queue charged it (jobBytes)
}

// Scheduler runs speculation: after each demand it asks its planner how far
// to expand below what was read, and queues the job for its workers. A
// demand never waits for it: the scheduler only learns of demands after
// they are answered, and its fetches go through the fetcher's in-flight
// table, where a demand joins them rather than queueing behind them.
// Speculative jobs wait in a bounded queue, newest first, drained by
// Workers goroutines; with a Chooser, one more goroutine learns from the
// reads (see choose); all are stopped by Close.
type Scheduler struct {
	cfg     Config
	fetcher Fetcher
	planner Planner
	chooser Chooser // nil when the planner does not choose object by object

	jobs  *queue
	index *triggerIndex // the triggers of the jobs queued and running
	win   *Window       // a slot per speculative origin call in flight

	mu      sync.Mutex
	idle    *sync.Cond // signalled when running or learning drops to 0; uses mu
	running int        // workers holding or about to pop a job; guarded by mu
	runs    runs       // the jobs workers run now; guarded by mu
	// learning counts the readings handed to the learner and not yet
	// learned from (see choose); read by Idle under mu.
	learning  atomic.Int64
	reads     chan reading // to the learner, in the order requests were answered
	readBytes *readBytes   // of the readings in reads and being learned from

	ctx       context.Context // cancelled by Close; speculative work runs under it
	cancel    context.CancelFunc
	wg        sync.WaitGroup // the workers
	closeOnce sync.Once
	whole     wholeGate // one whole-levels Expand in flight at a time (expandWhole)
	// now is the clock Learning and Choosing are timed by; tests set it
	// before the first request.
	now func() time.Time
}

// New starts a scheduler with cfg.Workers workers; Close stops them.
func New(cfg Config, f Fetcher, p Planner) (*Scheduler, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Window == nil {
		cfg.Window = NewWindow(cfg.Workers, cfg.Metrics)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Scheduler{
		cfg: cfg, fetcher: f, planner: p,
		jobs:  newQueue(cfg.QueueSize, cfg.QueueBytes),
		index: newTriggerIndex(),
		win:   cfg.Window,
		runs:  make(runs),
		ctx:   ctx, cancel: cancel,
		now: time.Now,
	}
	s.idle = sync.NewCond(&s.mu)
	if ch, ok := p.(Chooser); ok {
		s.chooser = ch
		s.reads = make(chan reading, cfg.QueueSize)
		s.readBytes = newReadBytes(cfg.QueueBytes)
		s.wg.Add(1)
		go s.learner()
	}
	if st, ok := p.(Static); ok && cfg.Mode == ModeStatic {
		cfg.Metrics.Depth(st.Depth)
	}
	for i := 0; i < cfg.Workers; i++ {
		s.wg.Add(1)
		go s.work()
	}
	return s, nil
}

// Close cancels outstanding speculative work and waits for the workers. It
// is idempotent.
func (s *Scheduler) Close() {
	s.closeOnce.Do(func() {
		s.cancel()
		s.wg.Wait()
		s.mu.Lock()
		s.idle.Broadcast() // Idle returns once closed
		s.mu.Unlock()
	})
}

func (s *Scheduler) work() {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.jobs.ready:
		}
		for s.ctx.Err() == nil && s.runOne() {
		}
	}
}

// runOne pops and runs the newest job, and reports whether there was one.
// It counts itself running before it pops, so that Idle never sees an
// empty queue while a job is on its way to a worker.
func (s *Scheduler) runOne() bool {
	s.mu.Lock()
	s.running++
	j, ok := s.jobs.pop()
	gone := ok && j.goneFor()
	var r *run
	if ok && !gone { // under mu, so that preempt and Gone find the job queued or running
		r = s.runs.start(s.ctx, j)
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		var held []*graph.Object // what preempt left of its triggers
		if gone {
			held = j.triggers
		} else if ok {
			held = r.triggers
			s.runs.end(r)
		}
		s.index.release(held) // before Idle can see the job end
		if s.running--; s.running == 0 {
			s.idle.Broadcast()
		}
		s.mu.Unlock()
	}()
	if gone {
		s.cfg.Metrics.ClientGone()
	}
	if !ok || gone {
		return ok
	}
	switch {
	case len(j.refresh) > 0:
		_, _ = s.fetcher.Fetch(r.ctx, j.refresh) // a failure leaves the stale copy
	case len(j.ahead) > 0:
		s.expandAhead(r.ctx, j)
	case j.chance:
		s.expandChances(r.ctx, j)
	default:
		s.expand(r.ctx, j)
	}
	return true
}

// Idle waits until no read is left to learn from and no job is queued or
// running: every speculation scheduled so far has landed or given up. For
// tests and benchmarks that must compare what speculation did, not when.
func (s *Scheduler) Idle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.learning.Load() > 0 || s.running > 0 || s.jobs.len() > 0 {
		if s.ctx.Err() != nil {
			return
		}
		s.idle.Wait()
	}
}

// QueuedBytes is what the scheduler's queues keep alive now, in Size bytes
// (see Config.QueueBytes): the jobs waiting for a worker, and the reads
// waiting for the learner or being learned from (0 without a chooser).
// Read at every scrape of lookahead_prefetch_queue_bytes.
func (s *Scheduler) QueuedBytes() (jobs, reads int64) {
	if s.readBytes != nil {
		reads = s.readBytes.held.Load()
	}
	return s.jobs.held(), reads
}

// enqueue queues speculative work; speculation never blocks a demand, so a
// full queue drops its oldest jobs instead (see queue), counted.
func (s *Scheduler) enqueue(j job) { s.enqueueOr(j, nil) }

// enqueueOr is enqueue, unless into folds j into a job already queued
// (queue.merge), where it then runs.
func (s *Scheduler) enqueueOr(j job, into func(old *job) bool) {
	if j.goneFor() { // its connection ended while the request was answered
		s.cfg.Metrics.ClientGone()
		return
	}
	s.index.hold(j.triggers)
	var dropped []job
	merged := false
	if into != nil {
		merged, dropped = s.jobs.merge(&j, into)
	}
	if !merged {
		j.queued = time.Now()
		dropped = s.jobs.push(j)
	}
	for _, old := range dropped {
		s.index.release(old.triggers)
		s.cfg.Metrics.Dropped()
	}
}

// After is told of every answered demand. It schedules the expansion below
// what the demand read from the origin or a prefetch (and below hits, when
// the request asked for a prefetch: a request that asks gets it, cached or
// not), and the refresh of what was answered stale; with a chooser, it hands
// it what the request read instead (see choose). The expansion is for the
// Client of ctx (see ClientOf), the refresh for whoever reads next.
func (s *Scheduler) After(ctx context.Context, a *fetch.Answer, h Hint) {
	if m := missed(a); m != nil {
		s.preempt(m, a.Began)
	}
	if len(a.Revalidate) > 0 {
		s.enqueue(job{refresh: a.Revalidate})
	}
	if s.chooser != nil && !h.Given() {
		s.choose(ctx, a)
		return
	}
	var follow []*graph.Object
	ahead := expandedAhead(ctx)
	for _, r := range a.Results {
		switch {
		case ahead[r.Object.ID]:
			// CaughtUp expanded the request's hint below it already.
		case r.Status == fetch.StatusHitPrefetched || r.Status == fetch.StatusJoined:
			// A used prefetch moves the window: expand below it so that the
			// application's next step is already on its way (Knafla's POD).
			follow = append(follow, r.Object)
		case r.Status == fetch.StatusMiss:
			follow = append(follow, r.Object)
		case r.Status == fetch.StatusHit && !r.Stale && h.Given():
			follow = append(follow, r.Object)
		}
	}
	s.schedule(ctx, follow, h)
}

// schedule queues the speculative expansion below roots for the Client of
// ctx.
func (s *Scheduler) schedule(ctx context.Context, roots []*graph.Object, h Hint) {
	if len(roots) == 0 || s.cfg.Mode == ModeOff {
		return
	}
	b := s.planner.Budget(roots, h)
	if h.Depth == nil { // the planner's own depth, not a request's override
		s.cfg.Metrics.Depth(b.Depth)
	}
	if b.Depth <= 0 {
		return
	}
	j := job{roots: roots, triggers: roots, client: ClientOf(ctx)}
	j.budget, j.capped = s.capBudget(b)
	s.enqueue(j)
}

// capBudget returns b fetching at most tierCap's objects, and whether that
// lowered it.
func (s *Scheduler) capBudget(b graph.Budget) (graph.Budget, bool) {
	if c := s.tierCap(); c > 0 && (b.MaxObjects == 0 || b.MaxObjects > c) {
		b.MaxObjects = c
		return b, true
	}
	return b, false
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
func (s *Scheduler) tierCap() int {
	mean := s.fetcher.MeanObjectBytes()
	if mean == 0 || s.cfg.TierBytes == 0 {
		return 0
	}
	return int(max(s.cfg.TierBytes/2/mean, 1))
}
