package prefetch

import (
	"context"
	"slices"
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

// gatedChooser is fixedChooser whose ReadAt, the learner's, takes a token
// from gate first, unless gate is nil: the test decides when each reading
// is learned from. It records the ids it learns from.
type gatedChooser struct {
	fixedChooser
	gate chan struct{}
	mu   sync.Mutex
	ids  []string
}

func (c *gatedChooser) ReadAt(at time.Time, objs []*graph.Object, waited bool, rtt time.Duration) []string {
	if c.gate != nil {
		<-c.gate
	}
	c.mu.Lock()
	for _, o := range objs {
		c.ids = append(c.ids, o.ID)
	}
	c.mu.Unlock()
	return c.fixedChooser.ReadAt(at, objs, waited, rtt)
}

// seen is the ids learned from so far, in order.
func (c *gatedChooser) seen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.ids)
}

// newGatedRig is a rig whose scheduler learns through a gatedChooser, with
// readings of budget bytes queued at most; mode off, so that learning
// queues no job. The gate (nil when not gated) is closed before the
// scheduler is.
func newGatedRig(t *testing.T, budget int64, gated bool) (*Scheduler, chan struct{}) {
	var gate chan struct{}
	if gated {
		gate = make(chan struct{})
	}
	r := newRig(t, newFakeOrigin(nil), Config{Mode: ModeOff, QueueBytes: budget}, &gatedChooser{gate: gate}, cache.Config{})
	if gated {
		t.Cleanup(func() { close(gate) }) // runs before the rig's: the learner gets out of ReadAt
	}
	return r.engine.s, gate
}

// hitAsync tells s of a hit on o from a goroutine, and returns a channel
// closed once After has returned.
func hitAsync(s *Scheduler, o *graph.Object) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.After(context.Background(), &fetch.Answer{Results: []fetch.Result{{Object: o, Status: fetch.StatusHit}}}, Hint{})
	}()
	return done
}

// waitDone fails the test if done is not closed soon (rather than hanging
// it).
func waitDone(t *testing.T, done <-chan struct{}, msg string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal(msg)
	}
}

// A request waits while the readings queued for the learner hold more
// than QueueBytes of objects, and gets through once the learner has learned
// from enough of them. A reading larger than the whole budget is charged
// the whole budget: it waits for the queue to empty, then goes through
// alone, and one after it waits for it.
func TestLearnerQueueWaitsForBytes(t *testing.T) {
	tests := []struct {
		name   string
		budget int64
		fit    int // readings of 1000 bytes that go through before one waits
	}{
		{name: "two fit", budget: 2500, fit: 2},
		{name: "larger than the budget", budget: 500, fit: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, gate := newGatedRig(t, tt.budget, true)
			for i := range tt.fit {
				// The first is taken by the learner, which waits at the
				// gate; the others queue.
				waitDone(t, hitAsync(s, sized(t, "r"+itoa(i), 1000)), "a reading that fits made the request wait")
			}
			_, reads := s.QueuedBytes()
			assert.Equal(t, min(int64(tt.fit)*1000, tt.budget), reads, "bytes charged")

			waiting := hitAsync(s, sized(t, "w", 1000))
			require.Eventually(t, func() bool { return s.readBytes.waiting.Load() == 1 }, 10*time.Second, time.Millisecond,
				"the request over the budget never came to wait")
			select {
			case <-waiting:
				t.Fatal("the request over the budget did not wait")
			default:
			}
			gate <- struct{}{} // the learner learns from the first reading and gives its bytes back
			waitDone(t, waiting, "the request still waits once the learner has made room")

			for range tt.fit {
				gate <- struct{}{}
			}
			s.learnt()
			_, reads = s.QueuedBytes()
			assert.Zero(t, reads, "every reading's bytes given back")
		})
	}
}

// Readings larger than the whole budget, one after another as fast as
// requests come, all go through: none waits for room that can never be.
func TestLearnerPassesReadingsLargerThanItsBudget(t *testing.T) {
	s, _ := newGatedRig(t, 100, false)
	var done []<-chan struct{}
	for i := range 20 {
		done = append(done, hitAsync(s, sized(t, "r"+itoa(i), 1000)))
	}
	for _, d := range done {
		waitDone(t, d, "a reading larger than the budget waits for ever")
	}
	s.learnt()
	_, reads := s.QueuedBytes()
	assert.Zero(t, reads)
}

// A request waiting for room leaves, charged nothing, when its own
// context ends or the scheduler closes, whichever comes first.
func TestReadBytesWaiterLeaves(t *testing.T) {
	for _, by := range []string{"its request's end", "the scheduler's close"} {
		t.Run(by, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			closing := make(chan struct{})
			b := newReadBytes(100)
			require.True(t, b.take(ctx, closing, b.charge(1000)), "alone, a reading larger than the budget goes through")
			got := make(chan bool)
			go func() { got <- b.take(ctx, closing, 50) }()
			require.Eventually(t, func() bool { return b.waiting.Load() == 1 }, 10*time.Second, time.Millisecond)
			if by == "its request's end" {
				cancel()
			} else {
				close(closing)
			}
			select {
			case ok := <-got:
				assert.False(t, ok, "let in though nothing was given back")
			case <-time.After(10 * time.Second):
				t.Fatal("the waiter never left")
			}
			assert.Equal(t, int64(100), b.held.Load(), "the waiter charged nothing")
			assert.Zero(t, b.waiting.Load(), "the waiter is no longer counted")
		})
	}
}

// A request that waits for room in the learner's queue is answered when
// its deadline passes: its read is not learned from, and is counted. The
// learner, once it catches up, learns from the others and never sees it.
func TestLearnerWaitEndsWithTheRequest(t *testing.T) {
	for _, full := range []string{"by bytes", "by count"} {
		t.Run(full, func(t *testing.T) {
			gate := make(chan struct{})
			ch := &gatedChooser{gate: gate}
			cfg := Config{Mode: ModeOff, QueueBytes: 2500}
			if full == "by count" {
				cfg = Config{Mode: ModeOff, QueueSize: 1}
			}
			r := newRig(t, newFakeOrigin(nil), cfg, ch, cache.Config{})
			t.Cleanup(func() { close(gate) })
			s := r.engine.s
			// The learner takes the first and waits at the gate; the second
			// fills the queue.
			const fit = 2
			for i := range fit {
				waitDone(t, hitAsync(s, sized(t, "r"+itoa(i), 1000)), "a reading that fits made the request wait")
			}

			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			done := make(chan struct{})
			go func() {
				defer close(done)
				s.After(ctx, &fetch.Answer{Results: []fetch.Result{{Object: sized(t, "late", 1000), Status: fetch.StatusHit}}}, Hint{})
			}()
			waitDone(t, done, "the request waited past its deadline")
			require.ErrorIs(t, ctx.Err(), context.DeadlineExceeded, "it left at its deadline, not before")
			assert.Equal(t, 1.0, testutil.ToFloat64(r.m.PrefetchUnlearned), "counted")

			for range fit {
				gate <- struct{}{}
			}
			s.learnt()
			assert.Equal(t, []string{"r0", "r1"}, ch.seen(), "the learner saw the others, in order, and not the late one")
			_, reads := s.QueuedBytes()
			assert.Zero(t, reads, "every reading's bytes given back, the late one's charged none")
		})
	}
}

// Waiters get in in the order they came: a small reading behind a large
// one waits for it, even when it would fit first.
func TestReadBytesWaitersGetInInOrder(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := newReadBytes(100)
	require.True(t, b.take(ctx, nil, 60))
	order := make(chan int64, 2)
	enter := func(c int64) {
		if b.take(ctx, nil, c) {
			order <- c
		}
	}
	go enter(80)
	require.Eventually(t, func() bool { return b.waiting.Load() == 1 }, 10*time.Second, time.Millisecond)
	go enter(30) // would fit beside the 60, but comes after the 80
	require.Eventually(t, func() bool { return b.waiting.Load() == 2 }, 10*time.Second, time.Millisecond)
	b.give(60)
	assert.Equal(t, int64(80), <-order, "the first to wait got in first")
	b.give(80)
	assert.Equal(t, int64(30), <-order)
	b.give(30)
	assert.Zero(t, b.held.Load())
}
