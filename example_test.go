package lookahead_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"

	"github.com/lookahead-dev/lookahead"
)

func Example() {
	c, err := lookahead.Dial(sidecarAddr) // e.g. "127.0.0.1:7070" or "unix:///run/lookahead.sock"
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	obj, _, err := c.Get(ctx, "task-0", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(obj.GetId(), obj.GetType(), len(obj.GetRefs()), "refs")
	// Output: task-0 Task 5 refs
}

func ExampleClient_BatchGet() {
	c, err := lookahead.Dial(sidecarAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	// Ask for two levels below each answer to be prefetched.
	rs, missing, err := c.BatchGet(context.Background(), []string{"task-1", "task-1.2", "nope"},
		&lookahead.Prefetch{Depth: lookahead.Uint32(2)})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range rs {
		fmt.Println(r.Object.GetId(), "stale:", r.Stale)
	}
	fmt.Println("missing:", missing)
	// Output:
	// task-1 stale: false
	// task-1.2 stale: false
	// missing: [nope]
}

func ExampleClient_GetGraph() {
	c, err := lookahead.Dial(sidecarAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	perLevel := map[int]int{}
	missing, err := c.GetGraph(context.Background(), lookahead.Graph{Roots: []string{"task-2"}, Depth: lookahead.Uint32(2)},
		func(r lookahead.Result) error {
			perLevel[r.Level]++
			return nil
		})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(perLevel, missing)
	// Output: map[0:1 1:5 2:25] []
}

func ExampleGraphStream_All() {
	c, err := lookahead.Dial(sidecarAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	s := c.StreamGraph(context.Background(), lookahead.Graph{Roots: []string{"task-3"}, Depth: lookahead.Uint32(1)})
	for r, err := range s.All() {
		if err != nil {
			log.Fatal(err)
		}
		if r.Level == 1 {
			fmt.Println("first child:", strings.HasPrefix(r.Object.GetId(), "task-3."))
			break // ends the walk
		}
		fmt.Println("root:", r.Object.GetId())
	}
	// Output:
	// root: task-3
	// first child: true
}

func ExampleClient_Put() {
	c, err := lookahead.Dial(sidecarAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	v, err := c.Put(ctx, &lookaheadv1.Object{Id: "note-1", Type: "Note", Payload: []byte("hello")}, lookahead.IfVersion(0))
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.Put(ctx, &lookaheadv1.Object{Id: "note-1", Type: "Note"}, lookahead.IfVersion(0))
	fmt.Println("version", v, "then:", err != nil)
	if err := c.Delete(ctx, "note-1", lookahead.IfVersion(v)); err != nil {
		log.Fatal(err)
	}
	_, _, err = c.Get(ctx, "note-1", nil)
	fmt.Println(err)
	// Output:
	// version 1 then: true
	// rpc error: code = NotFound desc = object "note-1" not found
}
