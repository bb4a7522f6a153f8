package near

import (
	"context"
	"iter"
	"slices"

	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/prefetch"
)

// What the hub pushes: the scheduler's predictions, to the subscribers
// they are for.

// predicted offers objects the sidecar predicts will be read next to the
// subscribers holding one of from, the ids the prediction's job expands
// below (prefetch.From): the applications that read them, or were pushed
// them. One sidecar serving several applications (the worker processes of
// one service, each with its own near cache) pushes each its own
// predictions, not everyone's: with N workers, everyone's would be N times
// the pushes, each near cache filled with the others' predictions at the
// expense of its own. nil from, a prediction of no job, goes to every
// subscriber. Each subscriber with a budget is pushed those it does not
// hold, newer than any change announced for them, while its queued pushes
// (and those taken and not released, see TakeHeld) stay within its budget
// and all of them within Config.QueueBytes;
// pushes never disconnect a subscriber (a busy queue drops them, counted).
func (h *Hub) predicted(from []string, objs []*graph.Object, reason string) {
	if len(objs) == 0 || h.pushing.Load() == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.subs {
		if s.budget <= 0 || s.closed || from != nil && !s.holdsAny(from) {
			continue
		}
		for _, o := range objs {
			if _, ok := s.held[o.ID]; ok || h.floors.below(o) {
				continue
			}
			sz := o.Size()
			if s.queued+s.takenPushes+sz > s.budget || h.queued+sz > h.cfg.QueueBytes || len(s.queue) >= h.cfg.QueueEvents*3/4 {
				h.m.pushDropped.WithLabelValues(s.label).Inc()
				continue
			}
			h.holdLocked(s, o.ID)
			h.enqueueLocked(s, Event{Kind: KindPush, Object: o, Reason: reason})
			s.queued += sz
			h.queued += sz
		}
	}
	h.m.queued.Set(float64(h.queued))
}

// Held offers objects the cache holds where the job of ctx predicts reads
// (prefetch.Config.Held), to the subscribers it predicts for (predicted),
// reason "held". A cold cache's predictions are pushed as the origin sends
// them; a warm one's are already held, and without this a near cache in
// front of a warm sidecar would be filled by nothing but the
// application's own reads.
func (h *Hub) Held(ctx context.Context, objs iter.Seq[*graph.Object]) {
	if h.pushing.Load() == 0 {
		return // nobody to push to: objs is not even looked at
	}
	h.predicted(prefetch.From(ctx), slices.Collect(objs), "held")
}
