// Package knafla generates Knafla's paged navigation dataset and navigates
// it the way his benchmark's application does.
//
// A page holds 112 objects in a binary tree whose every root-to-leaf path is
// 16 objects long: the page's entry, 14 more objects of which those at depths
// 3, 5, 7 and 11 are Branch objects (two children, "left" and "right"), and
// a leaf Out-Ref object at depth 15. So 15 objects precede each Out-Ref
// object on the way from the entry, and a page has 16 Out-Ref objects
// (1·4 + 2·2 + 4·2 + 8·4 + 16·4 = 112). Each Out-Ref object refers, in
// fields "out1", "out2" and "out3", to the entries of three other pages;
// every other object refers to the next one in field "next".
package knafla

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// PageObjects is the number of objects on a page.
const PageObjects = 112

// pathLen is the objects on the path from a page's entry to an Out-Ref.
const pathLen = 16

// Object types.
const (
	TypeNormal = "Normal"
	TypeBranch = "Branch"
	TypeOutRef = "OutRef"
)

// Fields lists every ref field of the dataset.
var Fields = []string{"next", "left", "right", "out1", "out2", "out3"}

// branchDepth marks the depths of Branch objects on every path.
var branchDepth = map[int]bool{3: true, 5: true, 7: true, 11: true}

// Dataset is Pages pages of PageObjects objects.
type Dataset struct {
	Pages        int
	PayloadBytes int
	Seed         uint64
}

// EntryID is the id of page p's entry object.
func EntryID(p int) string { return objectID(p, 0) }

func objectID(p, i int) string { return "pg" + strconv.Itoa(p) + "." + strconv.Itoa(i) }

// PageOf returns the page of an object id.
func PageOf(id string) (int, error) {
	s, ok := strings.CutPrefix(id, "pg")
	if !ok {
		return 0, fmt.Errorf("knafla: %q is not a page object", id)
	}
	s, _, _ = strings.Cut(s, ".")
	return strconv.Atoi(s)
}

// Generate emits every object, page by page.
func (d Dataset) Generate(emit graph.EmitFunc) error {
	if d.Pages < 4 {
		return errors.New("knafla: need at least 4 pages")
	}
	rng := rand.New(rand.NewPCG(d.Seed, 0x6b6e61666c61))
	for p := 0; p < d.Pages; p++ {
		for _, o := range d.page(p, rng) {
			if err := emit(o); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d Dataset) page(p int, rng *rand.Rand) []*graph.Object {
	objs := make([]*graph.Object, 0, PageObjects)
	var build func(depth int) string
	build = func(depth int) string {
		o := &graph.Object{ID: objectID(p, len(objs)), Version: 1, Payload: payload(rng, d.PayloadBytes)}
		objs = append(objs, o)
		switch {
		case depth == pathLen-1:
			o.Type = TypeOutRef
			for i, q := range d.targets(p, rng) {
				o.Refs = append(o.Refs, graph.Ref{Field: "out" + strconv.Itoa(i+1), ID: EntryID(q)})
			}
		case branchDepth[depth]:
			o.Type = TypeBranch
			l := build(depth + 1)
			r := build(depth + 1)
			o.Refs = []graph.Ref{{Field: "left", ID: l}, {Field: "right", ID: r}}
		default:
			o.Type = TypeNormal
			o.Refs = []graph.Ref{{Field: "next", ID: build(depth + 1)}}
		}
		return o.ID
	}
	build(0)
	return objs
}

// targets picks three distinct pages other than p.
func (d Dataset) targets(p int, rng *rand.Rand) []int {
	out := make([]int, 0, 3)
	for len(out) < 3 {
		q := rng.IntN(d.Pages)
		if q != p && !contains(out, q) {
			out = append(out, q)
		}
	}
	return out
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func payload(rng *rand.Rand, n int) []byte {
	if n <= 0 {
		return nil
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	return b
}

// Navigation describes one run of the application.
type Navigation struct {
	// Follow is how many of an Out-Ref object's three refs the application
	// follows, in field order: 3 is Knafla's Correct condition, 2 One
	// incorrect, 1 Two incorrect.
	Follow     int
	Pages      int    // pages to visit
	Start      int    // the first page
	TotalPages int    // pages in the dataset, for restarts
	Seed       uint64 // of the Branch choices and restarts
}

// Stats is what a navigation did.
type Stats struct {
	Objects  int // objects visited (one get each)
	Pages    int
	Restarts int // times every followed page had been visited and a new start was picked
}

// GetFunc obtains one object.
type GetFunc func(ctx context.Context, id string) (*graph.Object, error)

// Navigate runs n: from its start page it walks each page from the entry to
// an Out-Ref object, choosing a Branch object's child at random, and queues
// the pages of the first n.Follow out-refs, visiting pages first in, first
// out, each once, until n.Pages pages are visited. think runs after every
// object: the application's work on it.
func Navigate(ctx context.Context, n Navigation, get GetFunc, think func()) (Stats, error) {
	rng := rand.New(rand.NewPCG(n.Seed, 0x6e6176))
	var st Stats
	visited := make(map[int]bool, n.Pages)
	queue := []int{n.Start}
	for st.Pages < n.Pages {
		if len(queue) == 0 {
			if len(visited) >= n.TotalPages {
				return st, errors.New("knafla: every page visited")
			}
			p := rng.IntN(n.TotalPages)
			for visited[p] {
				p = (p + 1) % n.TotalPages
			}
			queue = append(queue, p)
			st.Restarts++
		}
		p := queue[0]
		queue = queue[1:]
		if visited[p] {
			continue
		}
		visited[p] = true
		st.Pages++
		id := EntryID(p)
		for id != "" {
			o, err := get(ctx, id)
			if err != nil {
				return st, fmt.Errorf("get %s: %w", id, err)
			}
			st.Objects++
			if think != nil {
				think()
			}
			id = ""
			switch o.Type {
			case TypeBranch:
				id = ref(o, [2]string{"left", "right"}[rng.IntN(2)])
			case TypeOutRef:
				for k := 1; k <= n.Follow; k++ {
					q, err := PageOf(ref(o, "out"+strconv.Itoa(k)))
					if err != nil {
						return st, err
					}
					if !visited[q] {
						queue = append(queue, q)
					}
				}
			default:
				id = ref(o, "next")
			}
		}
	}
	return st, nil
}

func ref(o *graph.Object, field string) string {
	for _, r := range o.Refs {
		if r.Field == field {
			return r.ID
		}
	}
	return ""
}
