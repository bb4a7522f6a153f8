package prefetch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/metrics"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeOrigin serves a fixed graph from memory and counts calls. A call that
// asks for an id in block waits until release is closed (or its context
// ends), after announcing itself on started.
type fakeOrigin struct {
	mu       sync.Mutex
	objs     map[string]*graph.Object
	batchGet int        // BatchGet calls
	asked    [][]string // ids of each BatchGet, in call order
	block    map[string]bool
	started  chan []string
	release  chan struct{}
}

func newFakeOrigin(objs []*graph.Object) *fakeOrigin {
	f := &fakeOrigin{objs: map[string]*graph.Object{}, block: map[string]bool{},
		started: make(chan []string, 64), release: make(chan struct{})}
	for _, o := range objs {
		f.objs[o.ID] = o
	}
	return f
}

func (f *fakeOrigin) BatchGet(ctx context.Context, ids []string) ([]*graph.Object, []string, error) {
	f.mu.Lock()
	f.batchGet++
	f.asked = append(f.asked, append([]string(nil), ids...))
	blocked := false
	for _, id := range ids {
		blocked = blocked || f.block[id]
	}
	found, missing := f.lookup(ids) // read first; the reply is what is delayed
	f.mu.Unlock()
	if blocked {
		f.started <- ids
		select {
		case <-f.release:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	return found, missing, nil
}

func (f *fakeOrigin) lookup(ids []string) (found []*graph.Object, missing []string) {
	for _, id := range ids {
		if o, ok := f.objs[id]; ok {
			found = append(found, o)
		} else {
			missing = append(missing, id)
		}
	}
	return found, missing
}

func (f *fakeOrigin) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.batchGet
}

// fakeExpander adds a server-side Expand to fakeOrigin, or answers it as
// unsupported. Like the real origin it walks with graph.Traversal and sends
// one message per level, objects and missing ids. Before sending a level
// that has a gate it announces the level on paused and waits for the gate to
// close; objects in withhold are never sent (as if the budget ran out).
type fakeExpander struct {
	*fakeOrigin
	unsupported bool
	expands     int
	gate        map[int]chan struct{}
	paused      chan int
	withhold    map[string]bool
}

func (f *fakeExpander) Expand(ctx context.Context, roots []string, b graph.Budget, fn func(int, []*graph.Object, []string) error) error {
	f.mu.Lock()
	f.expands++
	f.mu.Unlock()
	if f.unsupported {
		return fmt.Errorf("origin expand: %w", errors.ErrUnsupported)
	}
	t := graph.NewTraversal(roots, b)
	for !t.Done() {
		level := t.Level()
		if g := f.gate[level]; g != nil {
			f.paused <- level
			select {
			case <-g:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		f.mu.Lock()
		found, missing := f.lookup(t.Pending()) // server-side: no round trip
		f.mu.Unlock()
		var send []*graph.Object
		for _, o := range found {
			if !f.withhold[o.ID] {
				send = append(send, o)
			}
		}
		if err := fn(level, t.Resolve(send), missing); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeExpander) expandCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.expands
}

// tree returns a complete tree of the given fan-out and levels, root "t".
func tree(t *testing.T, fanout, levels int) []*graph.Object {
	t.Helper()
	var objs []*graph.Object
	require.NoError(t, graph.TaskTrees{Roots: 1, Fanout: fanout, Levels: levels, PayloadBytes: 16}.Generate(func(o *graph.Object) error {
		objs = append(objs, o)
		return nil
	}))
	return objs
}

type rig struct {
	engine *Engine
	cache  *cache.Cache
	m      *metrics.Set
}

func newRig(t *testing.T, o Origin, cfg Config, p Planner, cc cache.Config) *rig {
	t.Helper()
	m := metrics.New(prometheus.NewRegistry())
	c, err := cache.New(cc, m)
	require.NoError(t, err)
	e, err := New(cfg, o, c, p, m)
	require.NoError(t, err)
	t.Cleanup(func() { e.Close(); c.Close() })
	return &rig{engine: e, cache: c, m: m}
}

func fmtInt(i int) string { return fmt.Sprint(i) }
