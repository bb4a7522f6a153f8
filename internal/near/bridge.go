package near

import (
	"context"

	"google.golang.org/grpc/metadata"

	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/prefetch"
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

// Fetching returns o with the hub told of every fetch from the origin:
// each fetched id's sidecar copy expires the TTL later, which the hub tells
// the subscribers holding it; and what a speculative fetch brings (its ctx
// carries origin.Speculative, as fetch.Config.Speculative marks it) is what
// the scheduler predicts will be read next, so it is pushed, with reason
// "prefetch" (a BatchGet) or "expand" (an Expand); so are the held objects
// a speculative Expand names as known (its walk goes through them), with
// reason "held". A demand fetch is not
// pushed: the client that asked reads the answer itself, and no one
// predicted that another client will.
func (h *Hub) Fetching(o Origin) Origin { return fetching{o, h} }

type fetching struct {
	Origin
	hub *Hub
}

func (f fetching) BatchGet(ctx context.Context, ids []string) ([]*graph.Object, []string, error) {
	found, missing, err := f.Origin.BatchGet(ctx, ids)
	f.hub.fetched(found)
	if err == nil && speculative(ctx) {
		f.hub.predicted(prefetch.From(ctx), found, "prefetch")
	}
	return found, missing, err
}

// MaxKnown forwards the origin's limit on an Expand's known_ids (see
// fetch.Fetcher's heldBelow); 0 when it has none.
func (f fetching) MaxKnown() int {
	if k, ok := f.Origin.(interface{ MaxKnown() int }); ok {
		return k.MaxKnown()
	}
	return 0
}

func (f fetching) Expand(ctx context.Context, roots []string, known []*graph.Object, b graph.Budget, fn func(level int, objs []*graph.Object, missing []string) error) error {
	spec, from := speculative(ctx), prefetch.From(ctx)
	if spec {
		f.hub.predicted(from, known, "held") // walked through by the origin, never sent: predicted all the same
	}
	return f.Origin.Expand(ctx, roots, known, b, func(level int, objs []*graph.Object, missing []string) error {
		f.hub.fetched(objs)
		if spec {
			f.hub.predicted(from, objs, "expand")
		}
		return fn(level, objs, missing)
	})
}

// speculative reports whether ctx's origin calls are marked speculation.
func speculative(ctx context.Context) bool {
	md, _ := metadata.FromOutgoingContext(ctx)
	v := md.Get(origin.SpeculativeKey)
	return len(v) > 0 && v[0] == "1"
}
