package fetch

import (
	"fmt"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// receive handles one message of the stream: level's objects and missing ids.
// The refs of the objects are claimed before the objects enter the cache, so
// that whoever reads one there and looks below it finds its children in
// flight; level's own claims are released after, at the next level. The
// cache is filled without x.mu held, so that a walk sends the message's
// objects on meanwhile (see walk.stream), and before any level is
// completed, so that whoever its claims release finds them there (apply);
// a walk's expansion leaves both to its settler.
func (x *Expansion) receive(level int, objs []*graph.Object, missing []string) error {
	m, err := x.record(level, objs, missing)
	if err != nil {
		return err
	}
	if x.settler != nil {
		x.settler.msgs <- m
	} else {
		x.apply(m)
	}
	if m.stop {
		return graph.ErrStop // everything expected has arrived: stop reading
	}
	return nil
}

// received is what a message brought that the expansion awaited, and the
// levels it completed, to be released once its objects are in the cache.
type received struct {
	objs     []*graph.Object
	missing  []string
	complete []int
	stop     bool // nothing more is awaited
}

// record checks a message, records what it brings that the expansion
// awaits, claims the refs to follow, advances past the levels it completes
// and wakes those waiting for the expansion to change. The levels'
// claims are left to apply.
func (x *Expansion) record(level int, objs []*graph.Object, missing []string) (m received, err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if level < x.level && len(objs) == 0 && len(missing) == 0 {
		return m, nil // an empty message for a level already complete
	}
	if level < x.level || level > x.level+1 || level > x.budget.Depth {
		return m, fmt.Errorf("%w: level %d after level %d, depth %d", ErrMalformedExpand, level, x.level, x.budget.Depth)
	}
	x.deferring = true
	for x.level < level {
		x.advance()
	}
	m.objs = x.expected(level, objs)
	if x.ahead != nil {
		x.ahead.count(x, m.objs)
	}
	var next []string
	for _, o := range m.objs {
		if x.speculative {
			x.ids.Record(o.ID, &graph.Object{ID: o.ID, Version: o.Version, Refs: o.Refs})
			if _, claimed := x.owned[o.ID]; claimed {
				x.owned[o.ID] = o
			}
		} else {
			x.ids.Record(o.ID, o)
		}
		next = x.follow(level, o, next)
	}
	for _, id := range missing {
		if x.awaits(id) {
			x.ids.Record(id, absent)
			x.left[level]--
			m.missing = append(m.missing, id)
		}
	}
	x.claim(level+1, next)
	x.settle()
	x.deferring = false
	m.complete, x.completing = x.completing, nil
	m.stop = x.awaited() == 0
	if x.async {
		x.wake() // a walk sends on what has arrived (see walk.stream); others wait for whole levels
	}
	return m, nil
}

// apply fills the cache with what m brought, then completes the levels m
// completed.
func (x *Expansion) apply(m received) {
	to := fillOf(x.speculative)
	if x.async {
		to = toWalk // sent on to the walk's client already; cached for a second read
	}
	x.f.fill(m.objs, m.missing, to, x.since)
	if len(m.complete) == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, level := range m.complete {
		x.complete(level, nil)
	}
}

// levelDone completes level, or within record leaves it to apply. Called
// with x.mu held.
func (x *Expansion) levelDone(level int) {
	if x.deferring {
		x.completing = append(x.completing, level)
		return
	}
	x.complete(level, nil)
}

// settlerQueue is how many received messages may wait for a settler
// before the stream's reader waits for it. The objects on their way into
// the cache are then at most four messages' worth: two the settler is
// putting in (one merged, see more), one queued and the one being read.
// Those the walk has not sent yet count against its read-ahead bound as
// before; the others have been sent, and the cache's budget takes them.
const settlerQueue = 1

// settler puts what a walk's Expand receives in the cache, and then
// completes the levels each message completed (apply), on a goroutine of
// its own, so that the stream's reader decodes the next message
// meanwhile: the cache's Sets are the largest share of what receiving an
// object costs, and a walk sends what arrived on without waiting for them
// (the expansion records an object before the cache has it). Run starts
// it and stops it before the expansion finishes, so that everything
// received is in the cache, and its claims released, by then.
type settler struct {
	msgs chan received
	done chan struct{}
}

// startSettler starts x's settler.
func (x *Expansion) startSettler() *settler {
	s := &settler{msgs: make(chan received, settlerQueue), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for m := range s.msgs {
			x.apply(s.more(m))
		}
	}()
	return s
}

// more adds to m the messages queued behind it, so that a settler that
// fell behind catches up with one fill: the cache makes a fill's Sets
// visible at its end, which takes a wait for ristretto's goroutine per
// fill, not per object. Only those queued now: the settler is their one
// reader, so none of these receives waits.
func (s *settler) more(m received) received {
	for k := len(s.msgs); k > 0; k-- {
		n, ok := <-s.msgs
		if !ok {
			break
		}
		m.objs = append(m.objs, n.objs...)
		m.missing = append(m.missing, n.missing...)
		m.complete = append(m.complete, n.complete...)
	}
	return m
}

// stop waits for the settler to apply what it was given, and ends it.
func (s *settler) stop() {
	close(s.msgs)
	<-s.done
}
