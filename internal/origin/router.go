package origin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// ErrNoRoute: no route owns the id and there is no default route. A read
// answers such an id as missing; a write fails with it.
var ErrNoRoute = errors.New("no origin route owns the id")

// Origin is what the Router asks of each route's origin: the methods of
// Client the sidecar's engine and server use.
type Origin interface {
	BatchGet(ctx context.Context, ids []string) (found []*graph.Object, missing []string, err error)
	Expand(ctx context.Context, roots []string, known []*graph.Object, b graph.Budget, fn func(level int, objs []*graph.Object, missing []string) error) error
	Put(ctx context.Context, o *graph.Object, expected *uint64) (uint64, error)
	Delete(ctx context.Context, id string, expected *uint64) error
}

// Route sends the ids that start with Prefix to Origin; the route with the
// empty prefix is the default, for ids no other route owns. The longest
// matching prefix wins.
type Route struct {
	Prefix string
	Origin Origin
}

// Router spreads calls over several origins by id prefix and offers the
// methods of one: a BatchGet is split per route and merged, an Expand runs
// per route, a write goes to the route that owns its id. A ref that crosses
// from one origin to another is not the first origin's to answer: its
// Expand's word that it is missing is dropped, so the ref stays unanswered
// and the engine fetches it with a BatchGet, which the Router sends to the
// owner.
type Router struct {
	routes   []Route       // longest prefix first
	noExpand []atomic.Bool // by route: its origin answered Expand UNIMPLEMENTED
}

// MaxKnown is the fewest known_ids one Expand may carry over the routes'
// origins (Client.MaxKnown): 0 when one of them did not report it.
func (r *Router) MaxKnown() int {
	least := 0
	for i, rt := range r.routes {
		m := maxKnown(rt.Origin)
		if m == 0 {
			return 0
		}
		if i == 0 || m < least {
			least = m
		}
	}
	return least
}

// maxKnown is o's MaxKnown, or 0 when it has none.
func maxKnown(o any) int {
	if k, ok := o.(interface{ MaxKnown() int }); ok {
		return k.MaxKnown()
	}
	return 0
}

// NewRouter checks routes: at least one, prefixes distinct.
func NewRouter(routes []Route) (*Router, error) {
	if len(routes) == 0 {
		return nil, errors.New("origin router: no routes")
	}
	seen := map[string]bool{}
	for _, r := range routes {
		if seen[r.Prefix] {
			return nil, fmt.Errorf("origin router: prefix %q routed twice", r.Prefix)
		}
		if r.Origin == nil {
			return nil, fmt.Errorf("origin router: prefix %q has no origin", r.Prefix)
		}
		seen[r.Prefix] = true
	}
	sorted := slices.Clone(routes)
	slices.SortStableFunc(sorted, func(a, b Route) int { return len(b.Prefix) - len(a.Prefix) })
	return &Router{routes: sorted, noExpand: make([]atomic.Bool, len(sorted))}, nil
}

// owner is the index of the route that owns id; -1 when none does.
func (r *Router) owner(id string) int {
	for i, rt := range r.routes {
		if strings.HasPrefix(id, rt.Prefix) {
			return i
		}
	}
	return -1
}

// split groups ids by owning route, keeping their order; unowned ids are
// returned apart.
func (r *Router) split(ids []string) (groups map[int][]string, unowned []string) {
	groups = map[int][]string{}
	for _, id := range ids {
		if i := r.owner(id); i >= 0 {
			groups[i] = append(groups[i], id)
		} else {
			unowned = append(unowned, id)
		}
	}
	return groups, unowned
}

// BatchGet asks each route for its ids, all at once, and merges the
// answers; an id no route owns is missing. When a route fails, the call
// fails with its error.
func (r *Router) BatchGet(ctx context.Context, ids []string) (found []*graph.Object, missing []string, err error) {
	groups, unowned := r.split(ids)
	if len(groups) == 1 && len(unowned) == 0 {
		for i, g := range groups {
			return r.routes[i].Origin.BatchGet(ctx, g)
		}
	}
	type answer struct {
		found   []*graph.Object
		missing []string
		err     error
	}
	answers := make(map[int]*answer, len(groups))
	var wg sync.WaitGroup
	for i, g := range groups {
		a := &answer{}
		answers[i] = a
		wg.Go(func() { a.found, a.missing, a.err = r.routes[i].Origin.BatchGet(ctx, g) })
	}
	wg.Wait()
	var errs []error
	for i := range r.routes { // in route order: the answer does not depend on timing
		a, ok := answers[i]
		if !ok {
			continue
		}
		if a.err != nil {
			errs = append(errs, a.err)
			continue
		}
		found = append(found, a.found...)
		missing = append(missing, a.missing...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	return found, append(missing, unowned...), nil
}

// Expand runs the walk on the origin that owns the roots, telling each
// route the known ids it owns. Roots owned by
// several routes are walked on each, concurrently, with the budget shared
// by their number of roots, and handed over level by level once all have
// ended. Either way, missing ids that the answering route does not own are
// dropped (see Router); unowned roots are missing.
func (r *Router) Expand(ctx context.Context, roots []string, known []*graph.Object, b graph.Budget, fn func(level int, objs []*graph.Object, missing []string) error) error {
	groups, unowned := r.split(roots)
	for i := range groups {
		if r.noExpand[i].Load() {
			delete(groups, i) // left unanswered: the engine fetches them by BatchGet
		}
	}
	if len(groups) == 0 {
		if len(unowned) > 0 {
			return fn(0, nil, unowned)
		}
		return nil
	}
	if len(groups) == 1 {
		for i, g := range groups {
			err := r.expand(ctx, i, g, r.ownedObjects(i, known), b, func(level int, objs []*graph.Object, missing []string) error {
				if level == 0 {
					missing = append(missing, unowned...)
					unowned = nil
				}
				return fn(level, objs, r.owned(i, missing))
			})
			if err == nil && len(unowned) > 0 {
				err = fn(0, nil, unowned) // the stream sent nothing
			}
			return err
		}
	}
	return r.expandMany(ctx, groups, unowned, known, len(roots), b, fn)
}

// expand runs route i's Expand. An origin without one is remembered and
// answers nothing, not an error: the engine then fetches what it asked for
// by BatchGet, and the other origins keep their Expand.
func (r *Router) expand(ctx context.Context, i int, roots []string, known []*graph.Object, b graph.Budget, fn func(int, []*graph.Object, []string) error) error {
	err := r.routes[i].Origin.Expand(ctx, roots, known, b, fn)
	if errors.Is(err, errors.ErrUnsupported) {
		r.noExpand[i].Store(true)
		return nil
	}
	return err
}

// owned keeps the ids route i owns.
func (r *Router) owned(i int, ids []string) []string {
	out := ids[:0:0]
	for _, id := range ids {
		if r.owner(id) == i {
			out = append(out, id)
		}
	}
	return out
}

// ownedObjects keeps the objects whose ids route i owns.
func (r *Router) ownedObjects(i int, objs []*graph.Object) []*graph.Object {
	var out []*graph.Object
	for _, o := range objs {
		if r.owner(o.ID) == i {
			out = append(out, o)
		}
	}
	return out
}

// level is what several routes' Expands sent for one level.
type level struct {
	objs    []*graph.Object
	missing []string
}

func (r *Router) expandMany(ctx context.Context, groups map[int][]string, unowned []string, known []*graph.Object, nroots int, b graph.Budget,
	fn func(level int, objs []*graph.Object, missing []string) error) error {
	var mu sync.Mutex
	levels := map[int]*level{0: {missing: unowned}}
	errs := make([]error, len(r.routes))
	var wg sync.WaitGroup
	for i, g := range groups {
		sub := b
		if b.MaxObjects > 0 {
			sub.MaxObjects = max(b.MaxObjects*len(g)/nroots, len(g))
		}
		wg.Go(func() {
			errs[i] = r.expand(ctx, i, g, r.ownedObjects(i, known), sub, func(n int, objs []*graph.Object, missing []string) error {
				mu.Lock()
				defer mu.Unlock()
				l := levels[n]
				if l == nil {
					l = &level{}
					levels[n] = l
				}
				l.objs = append(l.objs, objs...)
				l.missing = append(l.missing, r.owned(i, missing)...)
				return nil
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	deepest := 0
	for n := range levels {
		deepest = max(deepest, n)
	}
	seen := map[string]bool{} // two routes' walks may meet
	for n := 0; n <= deepest; n++ {
		l := levels[n]
		if l == nil {
			continue
		}
		objs := l.objs[:0:0]
		for _, o := range l.objs {
			if !seen[o.ID] {
				seen[o.ID] = true
				objs = append(objs, o)
			}
		}
		if err := fn(n, objs, l.missing); err != nil {
			return err
		}
	}
	return nil
}

// Put writes o at the route that owns its id.
func (r *Router) Put(ctx context.Context, o *graph.Object, expected *uint64) (uint64, error) {
	i := r.owner(o.ID)
	if i < 0 {
		return 0, fmt.Errorf("put %q: %w", o.ID, ErrNoRoute)
	}
	return r.routes[i].Origin.Put(ctx, o, expected)
}

// Delete deletes id at the route that owns it.
func (r *Router) Delete(ctx context.Context, id string, expected *uint64) error {
	i := r.owner(id)
	if i < 0 {
		return fmt.Errorf("delete %q: %w", id, ErrNoRoute)
	}
	return r.routes[i].Origin.Delete(ctx, id, expected)
}
