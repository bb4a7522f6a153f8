package prefetch

import (
	"context"
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
}

// choose hands what a request read to the learner, which learns from it
// after the answer has gone (see learn): the chooser's Read costs a read
// of objects with hundreds of refs their offers and the lists it closes,
// which every read would wait for. The learner takes readings in the order
// requests were answered; its queue holds QueueSize, and a full one makes
// the request wait (the chooser must see every read in order), as every
// request did before.
func (s *Scheduler) choose(ctx context.Context, a *fetch.Answer) {
	r := reading{ctx: context.WithoutCancel(ctx), objs: make([]*graph.Object, 0, len(a.Results)), at: time.Now()}
	for _, res := range a.Results {
		r.objs = append(r.objs, res.Object)
		r.waited = r.waited || res.Status == fetch.StatusMiss || res.Status == fetch.StatusJoined
	}
	s.learning.Add(1) // no lock on the request's path: only the last one learned takes mu
	select {
	case s.reads <- r:
	case <-s.ctx.Done():
		s.learned()
	}
}

// learner takes the readings choose hands it, in order, until Close.
func (s *Scheduler) learner() {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case r := <-s.reads:
			s.learn(r)
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
