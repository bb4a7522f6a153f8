package graph_test

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// fuzzGraph builds a graph from fuzz bytes: data[0] picks the number of
// objects (1..32), data[1] the roots; every following pair of bytes is an
// edge from one object to an object or, for ids past the last, to one of
// four that do not exist, through field "a" or "b". fan adds that many refs
// from the first object, cycling through every id: a huge fan-out full of
// duplicates.
func fuzzGraph(data []byte, fan uint16) (objs map[string]*graph.Object, roots []string, nIDs int) {
	const dangling = 4
	n := 1
	if len(data) > 0 {
		n += int(data[0] % 32)
	}
	nIDs = n + dangling
	id := func(b byte) string {
		i := int(b) % nIDs
		if i < n {
			return "n" + strconv.Itoa(i)
		}
		return "x" + strconv.Itoa(i-n)
	}
	objs = make(map[string]*graph.Object, n)
	for i := range n {
		objs["n"+strconv.Itoa(i)] = &graph.Object{ID: "n" + strconv.Itoa(i)}
	}
	// Roots: the first object, then up to three more (duplicates and
	// dangling ids included) chosen by data[1].
	roots = []string{"n0"}
	if len(data) > 1 {
		for k := range int(data[1] % 4) {
			roots = append(roots, id(data[1]>>2+byte(k)))
		}
	}
	field := func(b byte) string {
		if b&0x80 != 0 {
			return "b"
		}
		return "a"
	}
	for i := 2; i+1 < len(data); i += 2 {
		from := objs["n"+strconv.Itoa(int(data[i])%n)]
		from.Refs = append(from.Refs, graph.Ref{Field: field(data[i]), ID: id(data[i+1])})
	}
	for k := range int(fan % 4096) {
		objs["n0"].Refs = append(objs["n0"].Refs, graph.Ref{Field: field(byte(k)), ID: id(byte(k))})
	}
	return objs, roots, nIDs
}

// referenceBFS is the traversal's specification without a cap: the ids of
// each level, each id once, refs of existing objects only, levels 0..depth.
func referenceBFS(objs map[string]*graph.Object, roots []string, depth int, follows func(string) bool) []string {
	seen := map[string]bool{}
	var order, level []string
	for _, id := range roots {
		if !seen[id] {
			seen[id] = true
			level = append(level, id)
		}
	}
	for l := 0; len(level) > 0; l++ {
		order = append(order, level...)
		if l >= depth {
			break
		}
		var next []string
		for _, id := range level {
			o := objs[id]
			if o == nil {
				continue
			}
			for _, r := range o.Refs {
				if follows(r.Field) && !seen[r.ID] {
					seen[r.ID] = true
					next = append(next, r.ID)
				}
			}
		}
		level = next
	}
	return order
}

func FuzzTraversal(f *testing.F) {
	f.Add([]byte{}, uint8(3), uint8(0), uint8(0), uint16(0))
	f.Add([]byte{4, 0, 0, 1, 1, 2, 2, 3, 3, 0}, uint8(10), uint8(0), uint8(0), uint16(0))      // a cycle
	f.Add([]byte{2, 0, 0, 0, 1, 1}, uint8(5), uint8(0), uint8(0), uint16(0))                   // self references
	f.Add([]byte{5, 0, 0, 1, 0, 2, 1, 3, 2, 3, 3, 4}, uint8(5), uint8(0), uint8(0), uint16(0)) // shared child 3
	f.Add([]byte{3, 0, 0, 9, 0, 8, 1, 7}, uint8(5), uint8(0), uint8(0), uint16(0))             // dangling refs
	f.Add([]byte{8, 7, 0, 1, 1, 2, 2, 3}, uint8(2), uint8(3), uint8(0), uint16(0))             // extra roots, a cap
	f.Add([]byte{31, 255}, uint8(1), uint8(0), uint8(0), uint16(4000))                         // huge fan-out
	f.Add([]byte{31, 0}, uint8(255), uint8(7), uint8(1), uint16(300))                          // fan-out, cap, field "a" only
	f.Add([]byte{6, 3, 0x80, 1, 0x81, 2, 2, 3}, uint8(4), uint8(0), uint8(2), uint16(0))       // field "b" only
	f.Fuzz(func(t *testing.T, data []byte, depth, maxObjects, fields uint8, fan uint16) {
		objs, roots, nIDs := fuzzGraph(data, fan)
		b := graph.Budget{Depth: int(depth), MaxObjects: int(maxObjects)}
		switch fields % 3 {
		case 1:
			b.Fields = []string{"a"}
		case 2:
			b.Fields = []string{"b"}
		}
		lookup := func(ids []string) []*graph.Object {
			var out []*graph.Object
			for _, id := range ids {
				if o := objs[id]; o != nil {
					out = append(out, o)
				}
			}
			return out
		}

		tr := graph.NewTraversal(roots, b)
		var scheduled []string
		seen := map[string]bool{}
		for levels := 0; !tr.Done(); levels++ {
			// Every level schedules at least one new id of at most nIDs.
			if levels > nIDs {
				t.Fatalf("more than %d levels: does not terminate", nIDs)
			}
			if tr.Level() != levels {
				t.Fatalf("level %d, want %d", tr.Level(), levels)
			}
			if tr.Level() > b.Depth {
				t.Fatalf("level %d beyond depth %d", tr.Level(), b.Depth)
			}
			for _, id := range tr.Pending() {
				if seen[id] {
					t.Fatalf("%s scheduled twice", id)
				}
				seen[id] = true
				scheduled = append(scheduled, id)
			}
			if b.MaxObjects > 0 && len(scheduled) > b.MaxObjects {
				t.Fatalf("%d ids scheduled, cap %d", len(scheduled), b.MaxObjects)
			}
			tr.Resolve(lookup(tr.Pending()))
		}

		want := referenceBFS(objs, roots, b.Depth, tr.Follows)
		if b.MaxObjects > 0 && len(want) > b.MaxObjects {
			// A cap only cuts the uncapped order short.
			want = want[:b.MaxObjects]
		}
		if !slices.Equal(scheduled, want) {
			t.Fatalf("scheduled %v, want %v", scheduled, want)
		}
		var missing []string
		for _, id := range scheduled {
			if objs[id] == nil {
				missing = append(missing, id)
			}
		}
		if !slices.Equal(tr.Missing(), missing) {
			t.Fatalf("missing %v, want %v", tr.Missing(), missing)
		}

		// Walk drives the same traversal: one fetch per level, each id once.
		fetched := map[string]bool{}
		visited := 0
		err := graph.Walk(context.Background(), roots, b,
			func(_ context.Context, ids []string) ([]*graph.Object, error) {
				for _, id := range ids {
					if fetched[id] {
						t.Fatalf("Walk fetched %s twice", id)
					}
					fetched[id] = true
				}
				return lookup(ids), nil
			},
			func(int, *graph.Object) error { visited++; return nil })
		if err != nil {
			t.Fatal(err)
		}
		if visited != len(scheduled)-len(missing) {
			t.Fatalf("Walk visited %d objects, want %d", visited, len(scheduled)-len(missing))
		}
	})
}
