// Package resiliencetest provides a fake resilience.Clock for tests.
package resiliencetest

import (
	"sync"
	"time"
)

// Clock is a fake clock that moves only when told. After either waits for
// Advance or, with AutoAdvance, moves the clock itself and fires at once, so
// that code under test that backs off runs without sleeping while the test
// still sees every wait it made (Waits).
type Clock struct {
	AutoAdvance bool // set before use

	mu      sync.Mutex // protects the fields below
	now     time.Time
	waiters []waiter
	waits   []time.Duration
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

// NewClock returns a clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now implements resilience.Clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After implements resilience.Clock.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	ch := make(chan time.Time, 1)
	c.waiters = append(c.waiters, waiter{at: c.now.Add(d), ch: ch})
	if c.AutoAdvance {
		c.advance(d)
	} else {
		c.fire() // d <= 0 is due at once
	}
	return ch
}

// Advance moves the clock forward by d and fires the waits that are due.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advance(d)
}

func (c *Clock) advance(d time.Duration) {
	c.now = c.now.Add(d)
	c.fire()
}

func (c *Clock) fire() {
	keep := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			keep = append(keep, w)
		}
	}
	c.waiters = keep
}

// Waits returns every duration passed to After so far, in order.
func (c *Clock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}
