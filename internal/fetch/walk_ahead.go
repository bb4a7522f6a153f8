package fetch

import (
	"context"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// released stands in Expansion.ids for an object the walk has sent: the
// id stays known to the expansion (a duplicate is still dropped), the
// object is no longer held.
var released = &graph.Object{}

// readAhead bounds what a walk's Expand holds for the walk. The origin
// streams the subgraph as fast as it can while the walk sends each level
// to its client, as slow as that client reads: without a bound, every
// object received would stay in the expansion until the walk ends, as many
// as max_objects allows. With it, once the objects received and not yet
// sent exceed limit, the expansion stops reading the stream (the origin's
// sends then wait on HTTP/2 flow control) until the walk has sent a level;
// a sent level's objects are released. It never holds back the level the
// walk is on, which the walk cannot send before it is complete: so the
// expansion holds at most limit plus one origin message, or that one level
// when it alone is larger. Every object in the expansion's ids counts until
// released (the walk's expansion is never speculative, so ids holds whole
// objects): no per-object record of its own. Guarded by the expansion's mu.
type readAhead struct {
	limit  int64
	held   int64         // bytes of the objects received and not yet released
	needed int           // the expansion level the walk is on: never held back
	closed bool          // the walk ended: nothing is held for it
	room   chan struct{} // closed and replaced when the walk releases a level
}

// count adds objs, which receive has just kept, to what is held. Called
// with x.mu held.
func (a *readAhead) count(x *Expansion, objs []*graph.Object) {
	if a.closed {
		return
	}
	var n int64
	for _, o := range objs {
		n += o.Size()
	}
	a.held += n
	x.f.walkBytes.Add(n)
}

// pace waits, after a message of level, while the expansion holds more
// than the limit ahead of the walk.
func (a *readAhead) pace(ctx context.Context, x *Expansion, level int) error {
	x.mu.Lock()
	for a.held > a.limit && level > a.needed && !a.closed {
		room := a.room
		x.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return ctx.Err()
		}
		x.mu.Lock()
	}
	x.mu.Unlock()
	return nil
}

// release lets go of the objects of ids, which the walk has sent at the
// expansion's level, and lets the expansion read on.
func (a *readAhead) release(x *Expansion, level int, ids []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !a.closed {
		var n int64
		for _, id := range ids {
			if o, _ := x.ids.Get(id); outcomeOf(o) == outHeld {
				x.ids.Record(id, released)
				n += o.Size()
			}
		}
		a.held -= n
		x.f.walkBytes.Add(-n)
	}
	a.needed = max(a.needed, level+1)
	close(a.room)
	a.room = make(chan struct{})
}

// close stops holding the expansion back: the walk needs nothing more from
// it, and it may still be reading its stream's end. What it holds is no
// longer counted; the objects themselves stay in its ids, without a pass
// over them, until the walk lets go of the expansion, which it does once
// the Expand has returned (Walk waits for it).
func (a *readAhead) close(x *Expansion) {
	x.mu.Lock()
	if !a.closed {
		x.f.walkBytes.Add(-a.held)
	}
	a.held, a.closed = 0, true
	close(a.room)
	a.room = make(chan struct{})
	x.mu.Unlock()
}

// WalkMemory is the bytes of objects walks' Expands hold for their walks
// now (see readAhead).
func (f *Fetcher) WalkMemory() int64 { return f.walkBytes.Load() }
