package near

import (
	"context"

	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// Fetcher is f with the hub told of every write-side event it applies
// (Changed: a Put, Delete or Invalidate through the sidecar, a change from
// the origin's Watch) and of every clear (a restarted history, a new
// dataset): pass it wherever f's Changed, InvalidateVersion or Clear is
// called.
type Fetcher struct {
	*fetch.Fetcher
	hub *Hub
}

// Fetcher wraps f; see the type.
func (h *Hub) Fetcher(f *fetch.Fetcher) Fetcher { return Fetcher{f, h} }

// Changed implements fetch.Fetcher.Changed and tells the hub.
func (f Fetcher) Changed(id string, version uint64, deleted bool) bool {
	dropped := f.Fetcher.Changed(id, version, deleted)
	f.hub.Changed(id, version, deleted)
	return dropped
}

// InvalidateVersion is Changed under the change-stream follower's name.
func (f Fetcher) InvalidateVersion(id string, version uint64, deleted bool) bool {
	return f.Changed(id, version, deleted)
}

// Clear implements fetch.Fetcher.Clear and flushes every subscriber.
func (f Fetcher) Clear() {
	f.Fetcher.Clear()
	f.hub.Flush("sidecar cache cleared")
}

// Origin is the sidecar's read path to the origin (see prefetch.Origin and
// prefetch.Expander).
type Origin interface {
	BatchGet(ctx context.Context, ids []string) (found []*graph.Object, missing []string, err error)
	Expand(ctx context.Context, roots []string, known []*graph.Object, b graph.Budget, fn func(level int, objs []*graph.Object, missing []string) error) error
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

func (f fetching) Expand(ctx context.Context, roots []string, known []*graph.Object, b graph.Budget, fn func(level int, objs []*graph.Object, missing []string) error) error {
	return f.Origin.Expand(ctx, roots, known, b, func(level int, objs []*graph.Object, missing []string) error {
		f.hub.Predicted(objs, "expand")
		return fn(level, objs, missing)
	})
}
