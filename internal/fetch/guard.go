package fetch

import (
	"context"
	"sync"
)

// guard is what lets a speculative fetch (one Speculate, or one speculative
// Expansion) be cancelled while it can still be useless to everyone, and
// never after: once a demand has joined one of its calls, an application
// waits for it (Knafla's demand that waits for the prefetch in flight), and
// cutting it would make that demand wait for a second round trip.
type guard struct {
	f         *flights
	cancel    context.CancelFunc // ends the context of the fetch's origin calls
	demanded  bool               // a demand joined one of the fetch's calls; guarded by f.mu
	cancelled bool               // its origin calls were cut; guarded by f.mu
}

// cut cancels the fetch's origin calls, unless a demand has joined one.
func (g *guard) cut() {
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	if !g.demanded {
		g.cancelled = true
		g.cancel()
	}
}

// joinable reports whether a claim may wait for c: every call but one whose
// speculation was cut, which will deliver nothing; a claim that finds one
// fetches the id itself. Called with flights.mu held.
func (c *call) joinable() bool { return c.guard == nil || !c.guard.cancelled }

// demand marks c as waited for by a demand: from now on its fetch is not
// cut. Called with flights.mu held.
func (c *call) demand() {
	if c.guard != nil {
		c.guard.demanded = true
	}
}

// guarded returns the context for the origin calls of the speculative fetch
// g guards, and a function to call when they are done. The fetch is cut
// (see guard.cut) when ctx ends, or at once when the job that ctx belongs
// to is abandoned (see Abandonable): a demand that has joined one of its
// calls by then owns the fetch, and it runs to its end (the origin
// client's own timeout bounds it). Claims made after a cut do not join it.
func (f *flights) guarded(ctx context.Context, g *guard) (context.Context, func()) {
	inner, cancel := context.WithCancel(context.WithoutCancel(ctx))
	g.f, g.cancel = f, cancel
	stop := context.AfterFunc(ctx, g.cut)
	if a, ok := ctx.Value(abandonKey{}).(*abandonment); ok {
		a.add(g)
	}
	return inner, func() {
		stop()
		cancel()
	}
}

type abandonKey struct{}

// abandonment is one speculative job's hold on the guards of its fetches.
type abandonment struct {
	mu     sync.Mutex
	done   bool     // guarded by mu
	guards []*guard // guarded by mu
}

// Abandonable returns ctx for the fetches of one speculative job, and the
// function that abandons the job: before it returns, the origin calls of
// the job's fetches that no demand has joined are cut, and any fetch the
// job starts later is cut as it starts. Ending ctx does the same, but
// asynchronously.
func Abandonable(ctx context.Context) (context.Context, func()) {
	a := &abandonment{}
	return context.WithValue(ctx, abandonKey{}, a), a.abandon
}

func (a *abandonment) abandon() {
	a.mu.Lock()
	a.done = true
	gs := a.guards
	a.guards = nil
	a.mu.Unlock()
	for _, g := range gs {
		g.cut()
	}
}

func (a *abandonment) add(g *guard) {
	a.mu.Lock()
	done := a.done
	if !done {
		a.guards = append(a.guards, g)
	}
	a.mu.Unlock()
	if done {
		g.cut()
	}
}
