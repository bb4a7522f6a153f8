// Package fetchtest holds in-memory fakes of an origin for the tests of the
// fetcher and the scheduler.
package fetchtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// Origin serves a fixed graph from memory and counts calls. A call that
// asks for an id in block waits until release is closed (or its context
// ends), after announcing itself on started.
type Origin struct {
	mu        sync.Mutex
	Objs      map[string]*graph.Object
	BatchGets int        // BatchGet calls
	Asked     [][]string // ids of each BatchGet, in call order
	Block     map[string]bool
	Started   chan []string
	Release   chan struct{}
}

// NewOrigin serves objs. Set Block before the first call; afterwards change
// objects with Set and Remove.
func NewOrigin(objs []*graph.Object) *Origin {
	f := &Origin{Objs: map[string]*graph.Object{}, Block: map[string]bool{},
		Started: make(chan []string, 64), Release: make(chan struct{})}
	for _, o := range objs {
		f.Objs[o.ID] = o
	}
	return f
}

func (f *Origin) BatchGet(ctx context.Context, ids []string) ([]*graph.Object, []string, error) {
	f.mu.Lock()
	f.BatchGets++
	f.Asked = append(f.Asked, append([]string(nil), ids...))
	blocked := false
	for _, id := range ids {
		blocked = blocked || f.Block[id]
	}
	found, missing := f.lookup(ids) // read first; the reply is what is delayed
	f.mu.Unlock()
	if blocked {
		f.Started <- ids
		select {
		case <-f.Release:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	return found, missing, nil
}

func (f *Origin) lookup(ids []string) (found []*graph.Object, missing []string) {
	for _, id := range ids {
		if o, ok := f.Objs[id]; ok {
			found = append(found, o)
		} else {
			missing = append(missing, id)
		}
	}
	return found, missing
}

func (f *Origin) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.BatchGets
}

// Expander adds a server-side Expand to Origin, or answers it as
// unsupported. Like the real origin it walks with graph.Traversal and sends
// one message per level, objects and missing ids. Before sending a level
// that has a gate it announces the level on paused and waits for the gate to
// close; objects in withhold are never sent (as if the budget ran out).
// Known objects are walked through and not sent, unless IgnoreKnown (an
// origin that sends them anyway); Sent counts, per id, the objects sent.
type Expander struct {
	*Origin
	Unsupported bool
	Expands     int
	Gate        map[int]chan struct{}
	Paused      chan int
	Withhold    map[string]bool
	IgnoreKnown bool
	Sent        map[string]int
}

func (f *Expander) Expand(ctx context.Context, roots []string, known []*graph.Object, b graph.Budget, fn func(int, []*graph.Object, []string) error) error {
	f.mu.Lock()
	f.Expands++
	f.mu.Unlock()
	if f.Unsupported {
		return fmt.Errorf("origin expand: %w", errors.ErrUnsupported)
	}
	t := graph.NewTraversal(roots, b)
	for !t.Done() {
		level := t.Level()
		if g := f.Gate[level]; g != nil {
			f.Paused <- level
			select {
			case <-g:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		f.mu.Lock()
		found, missing := f.lookup(t.Pending()) // server-side: no round trip
		f.mu.Unlock()
		var walked []*graph.Object
		for _, o := range found {
			if !f.Withhold[o.ID] {
				walked = append(walked, o)
			}
		}
		send := f.notKnown(t.Resolve(walked), known)
		if err := fn(level, send, missing); err != nil {
			return err
		}
	}
	return nil
}

// notKnown returns the objects of objs not in known, counting them as sent.
func (f *Expander) notKnown(objs, known []*graph.Object) []*graph.Object {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Sent == nil {
		f.Sent = make(map[string]int)
	}
	out := objs[:0:0]
	for _, o := range objs {
		if f.IgnoreKnown || !slices.ContainsFunc(known, func(k *graph.Object) bool { return k.ID == o.ID }) {
			f.Sent[o.ID]++
			out = append(out, o)
		}
	}
	return out
}

// SentIDs returns how many times Expand sent each id.
func (f *Expander) SentIDs() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.Sent)
}

func (f *Expander) ExpandCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.Expands
}

// Tree returns a complete tree of the given fan-out and levels, root "t".
func Tree(t testing.TB, fanout, levels int) []*graph.Object {
	t.Helper()
	var objs []*graph.Object
	require.NoError(t, graph.TaskTrees{Roots: 1, Fanout: fanout, Levels: levels, PayloadBytes: 16}.Generate(func(o *graph.Object) error {
		objs = append(objs, o)
		return nil
	}))
	return objs
}

// AskedIDs returns the ids of every BatchGet so far, in call order.
func (f *Origin) AskedIDs() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([][]string, len(f.Asked))
	copy(out, f.Asked)
	return out
}

// Set stores o, replacing any object of its id.
func (f *Origin) Set(o *graph.Object) {
	f.mu.Lock()
	f.Objs[o.ID] = o
	f.mu.Unlock()
}

// Remove deletes id.
func (f *Origin) Remove(id string) {
	f.mu.Lock()
	delete(f.Objs, id)
	f.mu.Unlock()
}

// Unblock lets calls for id through without waiting for Release.
func (f *Origin) Unblock(id string) {
	f.mu.Lock()
	delete(f.Block, id)
	f.mu.Unlock()
}
