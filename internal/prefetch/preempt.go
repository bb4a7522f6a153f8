package prefetch

import (
	"context"
	"time"

	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// A speculative job can no longer be useful once a demand miss has
// overtaken it. A job is scheduled below its triggers, the objects a
// request read, to bring what the application reads next. A trigger is
// overtaken when the application then reads, and misses (it waits on the
// origin for an object no fetch was bringing), an object the trigger refers
// to: the application got below the trigger before the job did. The
// expansion below the object it read is that miss's own job, queued newest
// and so run first; what the overtaken job would still fetch lies below
// that object too (the new job's work, which the in-flight table keeps
// from being fetched twice) or in the trigger's other branches, which the
// application passed by when it chose this one. A job is overtaken when
// all its triggers are (a request's BatchGet of many objects is overtaken
// only once it was in every one of their subtrees); a job with no triggers
// (the refresh of stale copies) never is.
//
// What this gives up: a reader that comes back to the branches it passed
// by (breadth first) finds them unfetched, where the overtaken job might
// have fetched them later. It reads them with requests of its own, each of
// which schedules its own job; and the job was overtaken only because
// speculation had fallen behind that reader.
//
// Only a job queued before the missing request found what it had to fetch
// (fetch.Answer.Began) can be overtaken by it: the request could not have
// joined what a later job fetches. The scheduler learns from a read after
// answering it (see choose), so the application's next request, a ref of
// what it just read, often misses before the read's job is queued; that
// job, still to bring the read's other refs (a profile view's second post,
// its friends), is not behind the application.
//
// An overtaken job still queued is dropped (Metrics.Preempted). A running
// one is cancelled (Metrics.Cancelled): it starts nothing more, and its
// origin calls in flight are cut, except those a demand has joined, which
// the application waits for (see fetch.Abandonable).
//
// Two other ways speculation could turn useless need no rule: objects that
// were fetched by other means since a job was scheduled are held when it
// runs, and it walks through them; and an object cannot be fetched by other
// means while a speculative call is bringing it, since whoever asks for it
// joins that call.

// run is a job a worker runs, with what it has left of its triggers, and
// its context.
type run struct {
	ctx      context.Context
	abandon  func() // cuts the job's origin calls no demand joined, at once
	cancel   context.CancelFunc
	triggers []*graph.Object
	client   *Client
	queued   time.Time // its job's
}

// runs are the jobs workers run now; the Scheduler's mu guards them.
type runs map[*run]struct{}

// start registers j as running under parent and returns its run.
func (rs runs) start(parent context.Context, j job) *run {
	ctx, abandon := fetch.Abandonable(WithFrom(parent, j.from()))
	ctx, cancel := context.WithCancel(ctx)
	r := &run{ctx: ctx, abandon: abandon, cancel: cancel, triggers: j.triggers, client: j.client, queued: j.queued}
	rs[r] = struct{}{}
	return r
}

// end unregisters r when its job returns.
func (rs runs) end(r *run) {
	delete(rs, r)
	r.cancel()
}

// missed returns the ids of a that were demand misses, nil if none: a
// joined fetch (speculative or not) was on its way, a hit was fetched
// before.
func missed(a *fetch.Answer) []string {
	var m []string
	for _, r := range a.Results {
		if r.Status == fetch.StatusMiss {
			m = append(m, r.Object.ID)
		}
	}
	return m
}

// overtake returns triggers less those in over (see triggerIndex.overtaken),
// and those.
func overtake(triggers []*graph.Object, over map[*graph.Object]bool) (left, gone []*graph.Object) {
	for i, o := range triggers {
		if over[o] {
			left = make([]*graph.Object, 0, len(triggers)-1)
			left = append(left, triggers[:i]...)
			for _, o := range triggers[i:] {
				if over[o] {
					gone = append(gone, o)
				} else {
					left = append(left, o)
				}
			}
			return left, gone
		}
	}
	return triggers, nil
}

// preempt drops the queued jobs and cancels the running ones that a
// request's demand misses overtook, of those queued before the request
// began (zero: all). Its cost is the index's, and, when the misses
// overtook a trigger, the triggers of the jobs queued and running: not
// their refs.
func (s *Scheduler) preempt(missed []string, began time.Time) {
	over := s.index.overtaken(missed)
	if over == nil {
		return
	}
	before := func(queued time.Time) bool { return began.IsZero() || queued.Before(began) }
	var gone []*graph.Object // triggers overtaken, which their jobs no longer hold
	dropped := s.jobs.filter(func(j *job) bool {
		if !before(j.queued) {
			return true
		}
		var g []*graph.Object
		j.triggers, g = overtake(j.triggers, over)
		gone = append(gone, g...)
		return len(g) == 0 || len(j.triggers) > 0
	})
	for range dropped {
		s.cfg.Metrics.Preempted()
	}
	s.mu.Lock()
	for r := range s.runs {
		if !before(r.queued) {
			continue
		}
		var g []*graph.Object
		if r.triggers, g = overtake(r.triggers, over); len(g) > 0 && len(r.triggers) == 0 {
			r.abandon()
			r.cancel()
			delete(s.runs, r) // counted once
			s.cfg.Metrics.Cancelled()
		}
		gone = append(gone, g...)
	}
	s.mu.Unlock()
	s.index.release(gone)
}
