package prefetch

import (
	"container/list"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// reading is what one answered request read, on its way to the learner
// (see learn).
type reading struct {
	ctx    context.Context // the request's values (ClientOf, From), without its cancellation
	objs   []*graph.Object
	waited bool      // for the origin: a miss, or a join of a fetch in flight
	at     time.Time // when it was answered: the chooser measures the application's pace by it
	bytes  int64     // what it was charged against QueueBytes (see readBytes)
}

// choose hands what a request read to the learner, which learns from it
// after the answer has gone (see learn): the chooser's Read costs a read
// of objects with hundreds of refs their offers and the lists it closes,
// which every read would wait for. The learner takes readings in the order
// requests were answered; its queue holds QueueSize readings and QueueBytes
// of their objects (see readBytes), and beyond either the request waits
// (the chooser must see every read in order), as every request did before,
// but not past its own end: a request whose deadline passes, or whose
// client gives up, while it waits for room hands nothing over and is
// answered (Metrics.Unlearned). Its answer is ready, and the learner's
// pace must not become the request's failure.
func (s *Scheduler) choose(ctx context.Context, a *fetch.Answer) {
	r := reading{ctx: context.WithoutCancel(ctx), objs: make([]*graph.Object, 0, len(a.Results)), at: time.Now()}
	for _, res := range a.Results {
		r.objs = append(r.objs, res.Object)
		r.waited = r.waited || res.Status == fetch.StatusMiss || res.Status == fetch.StatusJoined
		r.bytes += sizeBound(res.Object)
	}
	r.bytes = s.readBytes.charge(r.bytes)
	s.learning.Add(1) // no lock on the request's path: only the last one learned takes mu
	if !s.readBytes.take(ctx, s.ctx.Done(), r.bytes) {
		s.unlearned(ctx)
		return
	}
	select {
	case s.reads <- r: // room: handed over, whatever the request's state
		return
	default:
	}
	select {
	case s.reads <- r:
	case <-ctx.Done():
		s.readBytes.give(r.bytes)
		s.unlearned(ctx)
	case <-s.ctx.Done():
		s.readBytes.give(r.bytes)
		s.learned()
	}
}

// unlearned ends a reading choose did not hand over: at close, or counted
// when its request ended first.
func (s *Scheduler) unlearned(ctx context.Context) {
	if ctx.Err() != nil && s.ctx.Err() == nil {
		s.cfg.Metrics.Unlearned()
	}
	s.learned()
}

// learner takes the readings choose hands it, in order, until Close.
func (s *Scheduler) learner() {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case r := <-s.reads:
			began := s.now()
			s.learn(r)
			s.cfg.Metrics.Learning(s.now().Sub(began))
			s.readBytes.give(r.bytes)
			s.learned()
		}
	}
}

// learned counts a reading done with, and wakes Idle when it was the last.
// Idle checks learning under mu before it waits, and the broadcast takes
// mu, so a wake-up between its check and its wait is not lost.
func (s *Scheduler) learned() {
	if s.learning.Add(-1) == 0 {
		s.mu.Lock()
		s.idle.Broadcast()
		s.mu.Unlock()
	}
}

// readBytes bounds the bytes of the objects that readings waiting for the
// learner keep alive: most are cached too, but those evicted meanwhile live
// on until learned from, and QueueSize readings of up to --max-ids objects
// each is a bound of what the origin sends, not of what the sidecar was
// configured to hold.
//
// A request takes its reading's bytes before handing it over and waits
// while they do not fit, behind the requests that came to wait before it;
// the learner gives them back once it has learned from the reading. A
// reading larger than the whole budget is charged the whole budget
// (charge): it waits for the queue to empty and then passes alone, so that
// it cannot wait for ever; it holds no more than the request that read it,
// which the request's own limits bound.
//
// The hit path takes no lock: while nobody waits, a request takes its
// bytes with one compare-and-swap, and the learner gives them back with an
// add. Only a request that does not fit, and the learner when someone
// waits, take mu; bytes given back wake only the waiters that now fit.
type readBytes struct {
	max     int64
	held    atomic.Int64 // charged to the readings handed over and not yet learned from
	waiting atomic.Int64 // waiters' length; while above 0, newcomers queue behind them

	mu      sync.Mutex
	waiters list.List // of *byteWaiter, first come first; guarded by mu
}

// byteWaiter is a request waiting for c bytes; in is closed once it has
// them.
type byteWaiter struct {
	c  int64
	in chan struct{}
}

func newReadBytes(max int64) *readBytes { return &readBytes{max: max} }

// charge is what a reading of n bytes is charged: n, and at most the whole
// budget.
func (b *readBytes) charge(n int64) int64 { return min(n, b.max) }

// take charges c bytes, at most max, waiting while they do not fit; it
// reports false, charging nothing, when ctx ends or closing is closed
// first.
func (b *readBytes) take(ctx context.Context, closing <-chan struct{}, c int64) bool {
	if b.waiting.Load() == 0 && b.fit(c) {
		return true
	}
	b.mu.Lock()
	b.waiting.Add(1) // before fit: a give after this sees it and lets us in
	if b.waiters.Len() == 0 && b.fit(c) {
		b.waiting.Add(-1)
		b.mu.Unlock()
		return true
	}
	w := &byteWaiter{c: c, in: make(chan struct{})}
	e := b.waiters.PushBack(w)
	b.mu.Unlock()
	select {
	case <-w.in:
		return true
	case <-ctx.Done():
	case <-closing:
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.in: // let in meanwhile
		return true
	default:
	}
	first := b.waiters.Front() == e
	b.waiters.Remove(e)
	b.waiting.Add(-1)
	if first {
		b.letIn() // the next may fit where this one did not
	}
	return false
}

// fit charges c if the bytes held leave room for it.
func (b *readBytes) fit(c int64) bool {
	for {
		h := b.held.Load()
		if h+c > b.max {
			return false
		}
		if b.held.CompareAndSwap(h, h+c) {
			return true
		}
	}
}

// give gives back c bytes take charged.
func (b *readBytes) give(c int64) {
	b.held.Add(-c)
	if b.waiting.Load() > 0 {
		b.mu.Lock()
		b.letIn()
		b.mu.Unlock()
	}
}

// letIn lets in the waiters that fit, in the order they came, up to the
// first that does not; b.mu held.
func (b *readBytes) letIn() {
	for e := b.waiters.Front(); e != nil; e = b.waiters.Front() {
		w := e.Value.(*byteWaiter)
		if !b.fit(w.c) {
			return
		}
		b.waiters.Remove(e)
		b.waiting.Add(-1)
		close(w.in)
	}
}
