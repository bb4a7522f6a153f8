package store_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/store"
)

func Example() {
	dir, err := os.MkdirTemp("", "store-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	st, err := store.Open(filepath.Join(dir, "origin.db"), store.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	mustNotExist := uint64(0)
	version, revision, err := st.Put(&graph.Object{ID: "a", Type: "Task"}, &mustNotExist)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("put a at version", version, "revision", revision)

	_, _, err = st.Put(&graph.Object{ID: "a", Type: "Task"}, &mustNotExist)
	fmt.Println(err)

	found, missing, err := st.Get([]string{"a", "b"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(found), "found, missing", missing)

	changes, err := st.Changes(0, 10)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%+v\n", changes)
	// Output:
	// put a at version 1 revision 1
	// putting "a": store: version mismatch: object is at version 1, expected 0
	// 1 found, missing [b]
	// [{Revision:1 ID:a Version:1 Deleted:false}]
}
