package graph_test

import (
	"context"
	"fmt"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

func ExampleWalk() {
	// A small graph with a cycle (a -> b -> a), a shared child (d), a self
	// reference (d -> d) and a ref to an object that does not exist.
	objects := map[string]*graph.Object{}
	for _, o := range []*graph.Object{
		{ID: "a", Refs: []graph.Ref{{Field: "next", ID: "b"}, {Field: "next", ID: "c"}}},
		{ID: "b", Refs: []graph.Ref{{Field: "next", ID: "a"}, {Field: "next", ID: "d"}}},
		{ID: "c", Refs: []graph.Ref{{Field: "next", ID: "d"}, {Field: "owner", ID: "ghost"}}},
		{ID: "d", Refs: []graph.Ref{{Field: "next", ID: "d"}}},
	} {
		objects[o.ID] = o
	}
	// fetch stands in for one origin round trip per level.
	fetch := func(_ context.Context, ids []string) ([]*graph.Object, error) {
		fmt.Println("fetch", ids)
		var found []*graph.Object
		for _, id := range ids {
			if o, ok := objects[id]; ok {
				found = append(found, o)
			}
		}
		return found, nil
	}
	err := graph.Walk(context.Background(), []string{"a"}, graph.Budget{Depth: 5, MaxObjects: 10}, fetch,
		func(level int, o *graph.Object) error {
			fmt.Println("level", level, o.ID)
			return nil
		})
	fmt.Println("err", err)
	// Output:
	// fetch [a]
	// level 0 a
	// fetch [b c]
	// level 1 b
	// level 1 c
	// fetch [d ghost]
	// level 2 d
	// err <nil>
}
