package near

import (
	"context"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// Invalidator is what the change-stream follower calls (see
// coherence.Invalidator).
type Invalidator interface {
	InvalidateVersion(id string, version uint64, deleted bool) bool
	Clear()
}

// Watching returns next with the hub told of every change and clear.
func (h *Hub) Watching(next Invalidator) Invalidator { return watching{next, h} }

type watching struct {
	next Invalidator
	hub  *Hub
}

func (w watching) InvalidateVersion(id string, version uint64, deleted bool) bool {
	dropped := w.next.InvalidateVersion(id, version, deleted)
	w.hub.Changed(id, version, deleted)
	return dropped
}

func (w watching) Clear() {
	w.next.Clear()
	w.hub.Flush("origin history restarted")
}

// Origin is the sidecar's read path to the origin (see prefetch.Origin and
// prefetch.Expander).
type Origin interface {
	BatchGet(ctx context.Context, ids []string) (found []*graph.Object, missing []string, err error)
	Expand(ctx context.Context, roots []string, b graph.Budget, fn func(level int, objs []*graph.Object, missing []string) error) error
}

// Fetching returns o with every object it fetches offered to the hub as a
// prediction: an object fetched for one request is likely read again, and
// an expansion is what the prefetcher predicted. It stands in until the
// scheduler reports its predictions itself.
func (h *Hub) Fetching(o Origin) Origin { return fetching{o, h} }

type fetching struct {
	Origin
	hub *Hub
}

func (f fetching) BatchGet(ctx context.Context, ids []string) ([]*graph.Object, []string, error) {
	found, missing, err := f.Origin.BatchGet(ctx, ids)
	if err == nil {
		f.hub.Predicted(found, "fetch")
	}
	return found, missing, err
}

func (f fetching) Expand(ctx context.Context, roots []string, b graph.Budget, fn func(level int, objs []*graph.Object, missing []string) error) error {
	return f.Origin.Expand(ctx, roots, b, func(level int, objs []*graph.Object, missing []string) error {
		f.hub.Predicted(objs, "expand")
		return fn(level, objs, missing)
	})
}
