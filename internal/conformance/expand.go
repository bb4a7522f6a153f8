package conformance

import (
	"context"
	"fmt"
	"maps"
	"slices"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// expandCase is an Expand over the written graph and what it must send:
// the objects by level (short names) and the missing ids by level.
type expandCase struct {
	what    string
	req     *lookaheadv1.ExpandRequest // roots, known_ids: short names
	objects map[string]uint32
	missing map[uint32][]string
}

func (c *checker) expandCase(ctx context.Context, tc expandCase) error {
	if err := c.needWrites(); err != nil {
		return err
	}
	req := &lookaheadv1.ExpandRequest{Depth: tc.req.GetDepth(), MaxObjects: tc.req.GetMaxObjects(), Fields: tc.req.GetFields()}
	for _, r := range tc.req.GetRoots() {
		req.Roots = append(req.Roots, c.id(r))
	}
	for _, k := range tc.req.GetKnownIds() {
		req.KnownIds = append(req.KnownIds, c.id(k))
	}
	msgs, err := c.expandAll(ctx, req)
	if unimplemented(err) {
		return skip("no Expand")
	}
	if err != nil {
		return fmt.Errorf("Expand %s: %w", tc.what, err)
	}
	w := walkOf(msgs)
	if len(w.dups) > 0 {
		return fmt.Errorf("Expand %s sent %q more than once", tc.what, w.dups)
	}
	if w.back {
		return fmt.Errorf("Expand %s sent a level after a deeper one: levels must come in order", tc.what)
	}
	got := map[string]uint32{}
	for _, o := range w.objects {
		name := o.GetId()[len(c.prefix):]
		got[name] = w.level[o.GetId()]
		if want := c.graph[name]; want != nil && o.GetVersion() != want.GetVersion() {
			return fmt.Errorf("Expand %s sent %s at version %d, want %d", tc.what, name, o.GetVersion(), want.GetVersion())
		}
	}
	if !maps.Equal(got, tc.objects) {
		return fmt.Errorf("Expand %s sent objects at levels %v, want %v", tc.what, got, tc.objects)
	}
	for level, ids := range tc.missing {
		var want []string
		for _, id := range ids {
			want = append(want, c.id(id))
		}
		if !sameSet(w.missing[level], want) {
			return fmt.Errorf("Expand %s listed missing at level %d %q, want %q", tc.what, level, w.missing[level], want)
		}
	}
	return nil
}

func (c *checker) expandDepth(ctx context.Context) error {
	for _, tc := range []expandCase{
		{what: "of root at depth 0", req: &lookaheadv1.ExpandRequest{Roots: []string{"root"}},
			objects: map[string]uint32{"root": 0}},
		{what: "of root at depth 1", req: &lookaheadv1.ExpandRequest{Roots: []string{"root"}, Depth: 1},
			objects: map[string]uint32{"root": 0, "a": 1, "b": 1, "o": 1}},
		{what: "of root at depth 2", req: &lookaheadv1.ExpandRequest{Roots: []string{"root"}, Depth: 2},
			objects: map[string]uint32{"root": 0, "a": 1, "b": 1, "o": 1, "aa": 2}, missing: map[uint32][]string{2: {"absent"}}},
	} {
		if err := c.expandCase(ctx, tc); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) expandCycles(ctx context.Context) error {
	return c.expandCase(ctx, expandCase{
		what:    "of a at depth 6, through the cycle a → root → a",
		req:     &lookaheadv1.ExpandRequest{Roots: []string{"a"}, Depth: 6},
		objects: map[string]uint32{"a": 0, "aa": 1, "root": 1, "b": 2, "o": 2},
		missing: map[uint32][]string{3: {"absent"}},
	})
}

func (c *checker) expandBudget(ctx context.Context) error {
	if err := c.needWrites(); err != nil {
		return err
	}
	msgs, err := c.expandAll(ctx, &lookaheadv1.ExpandRequest{Roots: []string{c.id("root")}, Depth: 5, MaxObjects: 2})
	if unimplemented(err) {
		return skip("no Expand")
	}
	if err != nil {
		return fmt.Errorf("Expand with max_objects 2: %w", err)
	}
	w := walkOf(msgs)
	ids := w.ids()
	if len(ids) == 0 || len(ids) > 2 {
		return fmt.Errorf("Expand of root with max_objects 2 sent %d objects %q, want 1 or 2", len(ids), ids)
	}
	if ids[0] != c.id("root") {
		return fmt.Errorf("Expand with max_objects 2 sent %q first, want the root: the walk is breadth-first", ids[0])
	}
	if len(ids) == 2 && !slices.Contains([]string{c.id("a"), c.id("b"), c.id("o")}, ids[1]) {
		return fmt.Errorf("Expand with max_objects 2 sent %q second, want one of the root's refs", ids[1])
	}
	return nil
}

func (c *checker) expandFields(ctx context.Context) error {
	return c.expandCase(ctx, expandCase{
		what:    `of root at depth 3 following only "owner"`,
		req:     &lookaheadv1.ExpandRequest{Roots: []string{"root"}, Depth: 3, Fields: []string{"owner"}},
		objects: map[string]uint32{"root": 0, "o": 1},
	})
}

func (c *checker) expandKnown(ctx context.Context) error {
	return c.expandCase(ctx, expandCase{
		what:    "of root at depth 2 with a known",
		req:     &lookaheadv1.ExpandRequest{Roots: []string{"root"}, Depth: 2, KnownIds: []string{"a"}},
		objects: map[string]uint32{"root": 0, "b": 1, "o": 1, "aa": 2}, // a not sent, but walked through
	})
}

func (c *checker) expandDangling(ctx context.Context) error {
	return c.expandCase(ctx, expandCase{
		what:    "of b, whose ref dangles",
		req:     &lookaheadv1.ExpandRequest{Roots: []string{"b"}, Depth: 1},
		objects: map[string]uint32{"b": 0},
		missing: map[uint32][]string{1: {"absent"}},
	})
}
