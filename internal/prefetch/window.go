package prefetch

import (
	"context"
	"math/bits"
	"sync"
	"time"

	"github.com/lookahead-dev/lookahead/internal/origin"
)

// Window bounds the speculative origin calls in flight, between 1 and the
// scheduler's Workers, the way TCP's congestion window bounds packets:
// additive increase, multiplicative decrease (AIMD). Speculation is worth
// something only while it does not slow demand down; with a thousand
// sidecars speculating against one origin, it is most of that origin's load.
// So the window halves when the origin sheds a speculative call
// (RESOURCE_EXHAUSTED: it is over its limit, see docs/origin.md) or when
// demand round trips grow well above their baseline, and grows by one call
// each time a whole window's worth of speculative calls was answered.
//
// Its signals come from the origin client: Observe is an
// origin.Config.Observe. A Window nobody tells of round trips stays at its
// maximum, the scheduler's fixed Workers.
type Window struct {
	max int
	m   Metrics

	mu       sync.Mutex
	limit    int           // calls allowed in flight, 1..max; guarded by mu
	inFlight int           // guarded by mu
	acked    int           // speculative calls answered since limit last moved; guarded by mu
	holdoff  int           // round trips to observe before the next cut; guarded by mu
	wake     chan struct{} // closed and replaced when a slot frees or limit grows; guarded by mu
	// base is, per size class of demand round trip (see sizeClass), their
	// long-run mean: what demand costs on this machine and origin. recent is
	// a fast moving average of demand round trips as a multiple of their
	// class's base. Both are means, so that noise that leaves the mean
	// where it was (a loaded machine's spread) does not read as a rise.
	base   [sizeClasses]mean
	recent float64
}

// The window's constants. A cut needs recent demand round trips at
// riseFactor times their baseline; after a cut, the round trips already
// under way (and the averages' memory of them) must pass before another:
// holdoffRoundTrips, about what recent forgets in that many samples. A
// class's baseline is the mean of its first warmSamples round trips, which
// it judges none of, then a moving average that takes baseSamples to
// follow a lasting change.
const (
	riseFactor        = 2
	recentWeight      = 1.0 / 8
	answeredWeight    = 1.0 / 64
	baseSamples       = 1024
	warmSamples       = 16
	holdoffRoundTrips = 16
	sizeClasses       = 17
)

// mean is a baseline: the mean of the first warmSamples values, then a
// moving average of weight 1/baseSamples.
type mean struct {
	v float64
	n int
}

func (m *mean) add(x float64) {
	if m.n < warmSamples {
		m.n++
		m.v += (x - m.v) / float64(m.n)
		return
	}
	m.v += (x - m.v) / baseSamples
}

// sizeClass groups round trips by ids asked for, in powers of two: a batch
// of 256 costs more than a batch of 1 at any load, and only round trips of
// like size say whether the origin slowed down.
func sizeClass(ids int) int {
	return min(bits.Len(uint(ids)), sizeClasses-1)
}

// NewWindow makes a window of at most limit speculative calls, open fully;
// m (nil = nothing) receives its size and the sheds.
func NewWindow(limit int, m Metrics) *Window {
	if m == nil {
		m = nopMetrics{}
	}
	n := max(limit, 1)
	w := &Window{max: n, m: m, limit: n, wake: make(chan struct{}), recent: 1}
	m.Window(n)
	return w
}

// Limit is how many speculative calls may be in flight now.
func (w *Window) Limit() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.limit
}

// RoundTrip is what a read that speculation did not cover waits: the
// baseline of the smallest demand round trips observed, those for one id
// when the application reads one at a time (Get), else those of the
// fewest ids it asks for at once (an application that only calls BatchGet
// with several ids misses with several); 0 before any was observed, and
// then the learned planner plans nothing ahead (see Chooser.Ahead).
func (w *Window) RoundTrip() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.roundTripLocked()
}

func (w *Window) roundTripLocked() time.Duration {
	for _, b := range w.base {
		if b.n > 0 {
			return time.Duration(b.v)
		}
	}
	return 0
}

// Observe is told of every origin round trip as it ends, and keeps those
// that move the window: demand reads the origin answered, speculative calls
// it answered or shed. Others (writes, failures, cancellations) say nothing
// about the origin's load; probes (no ids) have a size class of their own.
func (w *Window) Observe(rt origin.RoundTrip) {
	switch {
	case rt.Shed():
		w.speculated(true)
	case rt.Err != nil: // a failure or a cancellation: no word on load
	case rt.Speculative:
		w.speculated(false)
	case rt.RPC == "BatchGet":
		w.demand(rt.IDs, rt.Elapsed)
	}
}

// demand is told of a demand round trip for ids ids that the origin
// answered, and how long it took: recent ones at riseFactor times their
// baseline cut the window.
func (w *Window) demand(ids int, elapsed time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	base := &w.base[sizeClass(ids)]
	if base.n >= warmSamples {
		w.recent += (float64(elapsed)/base.v - w.recent) * recentWeight
	}
	base.add(float64(max(elapsed, 1)))
	w.m.RoundTrip(w.roundTripLocked())
	if w.recent > riseFactor {
		w.cut()
	} else if w.holdoff > 0 {
		w.holdoff--
	}
}

// speculated is told of a speculative round trip's end: shed when the
// origin refused it RESOURCE_EXHAUSTED, which cuts the window; answered
// otherwise, which grows it by one call once a window's worth were, unless
// demand is slow. Each answer also moves recent a little toward the
// baseline, so that a window cut by a burst of demand grows back when no
// demand follows to say whether the origin recovered.
func (w *Window) speculated(shed bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if shed {
		w.m.Shed()
		w.cut()
		return
	}
	if w.holdoff > 0 {
		w.holdoff--
	}
	w.recent += (1 - w.recent) * answeredWeight
	if w.recent > riseFactor {
		return
	}
	if w.acked++; w.acked >= w.limit && w.limit < w.max {
		w.set(w.limit + 1)
	}
}

// cut halves the window, unless one did too recently for its effect to
// show. Called with mu held.
func (w *Window) cut() {
	if w.holdoff > 0 {
		w.holdoff--
		return
	}
	w.holdoff = holdoffRoundTrips
	w.set(max(w.limit/2, 1))
}

// set moves the limit, waking waiters when it grew. Called with mu held.
func (w *Window) set(limit int) {
	grew := limit > w.limit
	w.limit, w.acked = limit, 0
	w.m.Window(limit)
	if grew {
		w.signal()
	}
}

// signal wakes every waiter. Called with mu held.
func (w *Window) signal() {
	close(w.wake)
	w.wake = make(chan struct{})
}

// acquire waits for a slot: until fewer than limit speculative calls are in
// flight, or ctx ends.
func (w *Window) acquire(ctx context.Context) error {
	for {
		w.mu.Lock()
		if w.inFlight < w.limit {
			w.inFlight++
			w.mu.Unlock()
			return nil
		}
		wake := w.wake
		w.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// release frees a slot acquire took.
func (w *Window) release() {
	w.mu.Lock()
	w.inFlight--
	w.signal()
	w.mu.Unlock()
}

// nopMetrics counts nothing: the scheduler's and the Window's Metrics when none is given.
type nopMetrics struct{}

func (nopMetrics) Dropped()                {}
func (nopMetrics) Unlearned()              {}
func (nopMetrics) Clamped()                {}
func (nopMetrics) Depth(int)               {}
func (nopMetrics) Window(int)              {}
func (nopMetrics) RoundTrip(time.Duration) {}
func (nopMetrics) Learning(time.Duration)  {}
func (nopMetrics) Choosing(time.Duration)  {}
func (nopMetrics) Shed()                   {}
func (nopMetrics) Preempted()              {}
func (nopMetrics) Cancelled()              {}
func (nopMetrics) ClientGone()             {}
