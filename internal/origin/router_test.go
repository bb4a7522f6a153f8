package origin_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/origin"
)

// mapOrigin is an origin over a map: BatchGet, a breadth-first Expand that
// reports unknown ids as missing (as a real origin does for another
// origin's ids), and writes. It records the ids each call was asked for.
type mapOrigin struct {
	mu    sync.Mutex
	objs  map[string]*graph.Object
	asked [][]string
	err   error
}

func newMapOrigin(objs ...*graph.Object) *mapOrigin {
	m := &mapOrigin{objs: map[string]*graph.Object{}}
	for _, o := range objs {
		m.objs[o.ID] = o
	}
	return m
}

func (m *mapOrigin) BatchGet(_ context.Context, ids []string) (found []*graph.Object, missing []string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked = append(m.asked, ids)
	if m.err != nil {
		return nil, nil, m.err
	}
	for _, id := range ids {
		if o, ok := m.objs[id]; ok {
			found = append(found, o)
		} else {
			missing = append(missing, id)
		}
	}
	return found, missing, nil
}

func (m *mapOrigin) Expand(_ context.Context, roots []string, _ []*graph.Object, b graph.Budget, fn func(int, []*graph.Object, []string) error) error {
	m.mu.Lock()
	m.asked = append(m.asked, roots)
	m.mu.Unlock()
	seen := map[string]bool{}
	level := roots
	for n := 0; n <= b.Depth && len(level) > 0; n++ {
		var objs []*graph.Object
		var missing, next []string
		for _, id := range level {
			seen[id] = true
		}
		for _, id := range level {
			o, ok := m.objs[id]
			if !ok {
				missing = append(missing, id)
				continue
			}
			objs = append(objs, o)
			for _, r := range o.Refs {
				if !seen[r.ID] {
					seen[r.ID] = true
					next = append(next, r.ID)
				}
			}
		}
		if err := fn(n, objs, missing); err != nil {
			return err
		}
		level = next
	}
	return nil
}

func (m *mapOrigin) Put(_ context.Context, o *graph.Object, _ *uint64) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objs[o.ID] = o
	return 1, nil
}

func (m *mapOrigin) Delete(_ context.Context, id string, _ *uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objs, id)
	return nil
}

func node(id string, refs ...string) *graph.Object {
	o := &graph.Object{ID: id, Version: 1}
	for _, r := range refs {
		o.Refs = append(o.Refs, graph.Ref{Field: "f", ID: r})
	}
	return o
}

// shop: users on one origin, orders on another, the rest on the default.
func shop(t *testing.T) (r *origin.Router, users, orders, rest *mapOrigin) {
	users = newMapOrigin(node("users/1", "orders/1", "orders/2", "users/2"), node("users/2"))
	orders = newMapOrigin(node("orders/1", "users/1", "sku/1"), node("orders/2"))
	rest = newMapOrigin(node("sku/1"))
	r, err := origin.NewRouter([]origin.Route{{Prefix: "users/", Origin: users}, {Prefix: "orders/", Origin: orders}, {Origin: rest}})
	require.NoError(t, err)
	return r, users, orders, rest
}

func TestRouterBatchGetSplitsAndMerges(t *testing.T) {
	r, users, orders, rest := shop(t)
	found, missing, err := r.BatchGet(context.Background(), []string{"orders/1", "users/1", "sku/1", "users/9", "sku/9"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"orders/1", "users/1", "sku/1"}, graph.IDs(found))
	assert.ElementsMatch(t, []string{"users/9", "sku/9"}, missing)
	assert.Equal(t, [][]string{{"users/1", "users/9"}}, users.asked)
	assert.Equal(t, [][]string{{"orders/1"}}, orders.asked)
	assert.Equal(t, [][]string{{"sku/1", "sku/9"}}, rest.asked)

	orders.err = errors.New("orders down")
	_, _, err = r.BatchGet(context.Background(), []string{"users/1", "orders/1"})
	require.ErrorContains(t, err, "orders down")
	found, _, err = r.BatchGet(context.Background(), []string{"users/1"})
	require.NoError(t, err, "a route's failure stays its own")
	assert.Equal(t, []string{"users/1"}, graph.IDs(found))
}

func TestRouterWithoutDefault(t *testing.T) {
	users := newMapOrigin(node("users/1"))
	r, err := origin.NewRouter([]origin.Route{{Prefix: "users/", Origin: users}})
	require.NoError(t, err)
	found, missing, err := r.BatchGet(context.Background(), []string{"users/1", "other"})
	require.NoError(t, err)
	assert.Equal(t, []string{"users/1"}, graph.IDs(found))
	assert.Equal(t, []string{"other"}, missing, "an id no origin owns does not exist")
	_, err = r.Put(context.Background(), node("other"), nil)
	require.ErrorIs(t, err, origin.ErrNoRoute)
	require.ErrorIs(t, r.Delete(context.Background(), "other", nil), origin.ErrNoRoute)
}

func TestRouterRejectsBadRoutes(t *testing.T) {
	_, err := origin.NewRouter(nil)
	require.ErrorContains(t, err, "no routes")
	_, err = origin.NewRouter([]origin.Route{{Prefix: "a/", Origin: newMapOrigin()}, {Prefix: "a/", Origin: newMapOrigin()}})
	require.ErrorContains(t, err, `prefix "a/" routed twice`)
}

func TestRouterLongestPrefixWins(t *testing.T) {
	broad, narrow := newMapOrigin(), newMapOrigin()
	r, err := origin.NewRouter([]origin.Route{{Prefix: "users/", Origin: broad}, {Prefix: "users/vip/", Origin: narrow}})
	require.NoError(t, err)
	_, err = r.Put(context.Background(), node("users/vip/1"), nil)
	require.NoError(t, err)
	assert.Contains(t, narrow.objs, "users/vip/1")
	assert.Empty(t, broad.objs)
}

// levels collects what an Expand handed over.
type levels struct {
	objs    map[int][]string
	missing map[int][]string
	order   []int
}

func collect(t *testing.T, r *origin.Router, roots []string, depth int) levels {
	t.Helper()
	l := levels{objs: map[int][]string{}, missing: map[int][]string{}}
	err := r.Expand(context.Background(), roots, nil, graph.Budget{Depth: depth}, func(n int, objs []*graph.Object, missing []string) error {
		l.order = append(l.order, n)
		l.objs[n] = append(l.objs[n], graph.IDs(objs)...)
		l.missing[n] = append(l.missing[n], missing...)
		return nil
	})
	require.NoError(t, err)
	return l
}

func TestRouterExpandLeavesCrossOriginRefsUnanswered(t *testing.T) {
	r, users, orders, _ := shop(t)
	l := collect(t, r, []string{"users/1"}, 3)
	assert.Equal(t, []string{"users/1"}, l.objs[0])
	assert.Equal(t, []string{"users/2"}, l.objs[1], "only users' own objects")
	for n, m := range l.missing {
		assert.Empty(t, m, "level %d: orders/1 and orders/2 are not missing, they are another origin's", n)
	}
	assert.Equal(t, [][]string{{"users/1"}}, users.asked)
	assert.Empty(t, orders.asked, "the engine fetches the crossing refs itself, by BatchGet through the router")
}

func TestRouterExpandOverSeveralRoutes(t *testing.T) {
	r, _, _, _ := shop(t)
	l := collect(t, r, []string{"users/1", "orders/1", "nobody/1"}, 1)
	assert.Equal(t, []int{0, 1}, l.order, "levels in order, once each")
	assert.ElementsMatch(t, []string{"users/1", "orders/1"}, l.objs[0])
	assert.ElementsMatch(t, []string{"nobody/1"}, l.missing[0], "owned by the default route, which does not have it")
	assert.ElementsMatch(t, []string{"users/2"}, l.objs[1])
	for _, id := range l.missing[1] {
		assert.False(t, strings.HasPrefix(id, "users/") || strings.HasPrefix(id, "orders/"), "%s is another origin's", id)
	}
}

// noExpand is an origin without Expand.
type noExpand struct{ *mapOrigin }

func (n noExpand) Expand(context.Context, []string, []*graph.Object, graph.Budget, func(int, []*graph.Object, []string) error) error {
	n.mu.Lock()
	n.asked = append(n.asked, []string{"Expand"})
	n.mu.Unlock()
	return fmt.Errorf("origin expand: %w", errors.ErrUnsupported)
}

func TestRouterAnOriginWithoutExpandLeavesItsRootsToBatchGet(t *testing.T) {
	users := newMapOrigin(node("users/1", "users/2"), node("users/2"))
	plain := noExpand{newMapOrigin(node("orders/1"))}
	r, err := origin.NewRouter([]origin.Route{{Prefix: "users/", Origin: users}, {Prefix: "orders/", Origin: plain}})
	require.NoError(t, err)
	for range 2 {
		l := collect(t, r, []string{"users/1", "orders/1"}, 1)
		assert.Equal(t, []string{"users/1"}, l.objs[0], "orders/1 unanswered, not missing")
		assert.Empty(t, l.missing[0])
		assert.Equal(t, []string{"users/2"}, l.objs[1])
	}
	assert.Len(t, plain.asked, 1, "asked once, then remembered")
	l := collect(t, r, []string{"orders/1"}, 1)
	assert.Empty(t, l.objs, "not an error: the engine keeps Expand for the other origins")
}

// knowing is a mapOrigin that reports how many known_ids it takes.
type knowing struct {
	*mapOrigin
	max int
}

func (k knowing) MaxKnown() int { return k.max }

// A router takes as many known_ids as the least of its origins, and none
// beyond the contract's minimum when one of them does not say.
func TestRouterMaxKnownIsTheLeastOfItsOrigins(t *testing.T) {
	r, err := origin.NewRouter([]origin.Route{{Prefix: "a/", Origin: knowing{newMapOrigin(), 500}}, {Origin: knowing{newMapOrigin(), 300}}})
	require.NoError(t, err)
	assert.Equal(t, 300, r.MaxKnown())
	r, err = origin.NewRouter([]origin.Route{{Prefix: "a/", Origin: knowing{newMapOrigin(), 500}}, {Origin: newMapOrigin()}})
	require.NoError(t, err)
	assert.Zero(t, r.MaxKnown())
}
