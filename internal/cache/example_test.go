package cache_test

import (
	"fmt"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

func Example() {
	c, err := cache.New(cache.Config{MainBytes: 1 << 20, PrefetchBytes: 1 << 20}, cache.Metrics{})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	// The demand path stores what an application asked for, the prefetch
	// engine what it fetched speculatively, and ids the origin did not have.
	c.AddDemand(&graph.Object{ID: "task-0", Version: 1, Refs: []graph.Ref{{Field: "subtasks", ID: "task-0.1"}}})
	c.AddPrefetched(&graph.Object{ID: "task-0.1", Version: 1})
	c.AddMissing("task-9")

	for _, id := range []string{"task-0", "task-0.1", "task-9", "task-7"} {
		l, ok := c.Get(id)
		fmt.Printf("%s found=%v tier=%v negative=%v\n", id, ok, l.Tier, l.Negative)
	}
	// Output:
	// task-0 found=true tier=main negative=false
	// task-0.1 found=true tier=prefetch negative=false
	// task-9 found=true tier=none negative=true
	// task-7 found=false tier=none negative=false
}
