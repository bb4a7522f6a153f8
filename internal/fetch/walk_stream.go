package fetch

import (
	"context"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// front is how far into a level a walk has emitted its objects: the first
// ids of the level's step, of which held were held and fetch were to be
// fetched (the step's Held and Fetch are both in the order of its IDs),
// with objs objects among them (an id the origin said does not exist has
// none).
type front struct{ ids, held, fetch, objs int }

// stream emits the objects of level st while the walk's Expand brings
// them: after each message, the run of the level's ids at its front that
// are held or have arrived (or are known not to exist), in the plan's
// order, so that what the origin sent goes on to the walk's client while
// the origin sends the rest. It stops at the level's end, or once the
// level is complete in the Expand (or the Expand ended), leaving the ids
// from the first one the Expand did not bring to fetch. It returns how far
// it got and the fetched objects it emitted.
func (w *walk) stream(ctx context.Context, st graph.Step) (p front, fetched []*graph.Object, err error) {
	level := st.Level - w.xLevel
	for {
		changed, over := w.x.progress(level)
		objs, got, q := w.x.front(st, p)
		p, fetched = q, append(fetched, got...)
		if len(objs) > 0 {
			if err := w.emit(st.Level, w.results(st.Level, objs)); err != nil {
				return p, nil, err
			}
		}
		if over || p.ids == len(st.IDs) {
			return p, fetched, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return p, nil, ctx.Err()
		}
	}
}

// progress returns a channel closed at the expansion's next message (or
// level completed, or end), and whether level is complete or the
// expansion over: then nothing more of it is coming.
func (x *Expansion) progress(level int) (changed <-chan struct{}, over bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.changed, x.level > level || x.finished
}

// front passes over the ids of st from p on, in order, for as long as each
// is held (st.Held) or the expansion has received it or learned that it
// does not exist, and returns the objects passed over, the received ones
// among them, and how far it got.
func (x *Expansion) front(st graph.Step, p front) (objs, received []*graph.Object, q front) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for ; p.ids < len(st.IDs); p.ids++ {
		if p.held < len(st.Held) && st.Held[p.held].ID == st.IDs[p.ids] {
			objs = append(objs, st.Held[p.held])
			p.held++
			p.objs++
			continue
		}
		switch o, _ := x.ids.Get(st.IDs[p.ids]); outcomeOf(o) {
		case outAbsent:
		case outHeld:
			objs, received = append(objs, o), append(received, o)
			p.objs++
		default: // not received yet, or not by this expansion
			return objs, received, p
		}
		p.fetch++
	}
	return objs, received, p
}
