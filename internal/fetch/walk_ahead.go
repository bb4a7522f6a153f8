package fetch

import (
	"context"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// released stands in Expansion.got for an object the walk has sent: the
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
// when it alone is larger. Guarded by the expansion's mu.
type readAhead struct {
	limit   int64
	held    int64            // bytes of the objects counted
	counted map[string]int64 // objects received and not yet released, with their sizes
	needed  int              // the expansion level the walk is on: never held back
	closed  bool             // the walk ended: nothing is held for it
	room    chan struct{}    // closed and replaced when the walk releases a level
}

// pace counts what receive kept of a message of level, then waits while
// the expansion holds more than the limit ahead of the walk.
func (a *readAhead) pace(ctx context.Context, x *Expansion, level int, objs []*graph.Object) error {
	x.mu.Lock()
	for _, o := range objs {
		if _, ok := a.counted[o.ID]; !ok && !a.closed && x.got[o.ID] == o {
			n := o.Size()
			a.counted[o.ID] = n
			a.held += n
			x.f.walkBytes.Add(n)
		}
	}
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
	for _, id := range ids {
		if n, ok := a.counted[id]; ok {
			delete(a.counted, id)
			a.held -= n
			x.f.walkBytes.Add(-n)
			x.got[id] = released
		}
	}
	a.needed = max(a.needed, level+1)
	close(a.room)
	a.room = make(chan struct{})
}

// close releases everything: the walk needs nothing more from the
// expansion, which may still be reading its stream's end.
func (a *readAhead) close(x *Expansion) {
	x.mu.Lock()
	for id, n := range a.counted {
		x.got[id] = released
		x.f.walkBytes.Add(-n)
	}
	clear(a.counted)
	a.held, a.closed = 0, true
	close(a.room)
	a.room = make(chan struct{})
	x.mu.Unlock()
}

// WalkMemory is the bytes of objects walks' Expands hold for their walks
// now (see readAhead).
func (f *Fetcher) WalkMemory() int64 { return f.walkBytes.Load() }
