package graph

import (
	"math/rand/v2"
	"strconv"
)

// Shape ref fields: Chain links with "next", Diamonds with "children", Star
// with "members".
const (
	FieldNext     = "next"
	FieldChildren = "children"
	FieldMembers  = "members"
)

// ShapeID is the id of the i-th object of a shape whose ids start with
// prefix: prefix + "-" + i. Object 0 is where a reader starts (a chain's
// head, a DAG's root, a star's hub).
func ShapeID(prefix string, i int) string { return prefix + "-" + strconv.Itoa(i) }

// Chain generates a linked list of N objects, each referring to the next: a
// shape whose reader needs as many round trips as the chain is long unless
// something runs ahead of it.
type Chain struct {
	Prefix       string
	N            int
	PayloadBytes int
	Seed         uint64
}

// Generate emits the chain from its head.
func (g Chain) Generate(emit EmitFunc) error {
	rng := rand.New(rand.NewPCG(g.Seed, 0x63686169))
	for i := 0; i < g.N; i++ {
		o := &Object{ID: ShapeID(g.Prefix, i), Version: 1, Type: "Link", Payload: payload(rng, g.PayloadBytes)}
		if i+1 < g.N {
			o.Refs = []Ref{{Field: FieldNext, ID: ShapeID(g.Prefix, i+1)}}
		}
		if err := emit(o); err != nil {
			return err
		}
	}
	return nil
}

// Diamonds generates a layered DAG with heavy sharing: one root above Layers
// layers of Width objects, every object but the last layer's referring to
// Refs distinct objects of the layer below, so that most objects are reached
// along many paths (diamonds) and a walk that does not remember what it saw
// does exponential work.
type Diamonds struct {
	Prefix              string
	Layers, Width, Refs int
	PayloadBytes        int
	Seed                uint64
}

// Len is the number of objects: the root and the layers.
func (g Diamonds) Len() int { return 1 + g.Layers*g.Width }

// Generate emits the root, then the layers top down. Object 1+l*Width+j is
// the j-th object of layer l.
func (g Diamonds) Generate(emit EmitFunc) error {
	rng := rand.New(rand.NewPCG(g.Seed, 0x6469616d))
	for i := 0; i < g.Len(); i++ {
		o := &Object{ID: ShapeID(g.Prefix, i), Version: 1, Type: "Node", Payload: payload(rng, g.PayloadBytes)}
		first := 1 // the layer below the root starts at 1
		if i > 0 {
			first = 1 + ((i-1)/g.Width+1)*g.Width
		}
		if first < g.Len() {
			for _, j := range rng.Perm(g.Width)[:min(g.Refs, g.Width)] {
				o.Refs = append(o.Refs, Ref{Field: FieldChildren, ID: ShapeID(g.Prefix, first+j)})
			}
		}
		if err := emit(o); err != nil {
			return err
		}
	}
	return nil
}

// Star generates one hub referring to Leaves leaf objects, which refer to
// nothing: a fan-out no prefetcher can afford to follow in full for a reader
// that visits only a few leaves.
type Star struct {
	Prefix       string
	Leaves       int
	PayloadBytes int
	Seed         uint64
}

// Generate emits the hub (object 0), then leaves 1 to Leaves.
func (g Star) Generate(emit EmitFunc) error {
	rng := rand.New(rand.NewPCG(g.Seed, 0x73746172))
	hub := &Object{ID: ShapeID(g.Prefix, 0), Version: 1, Type: "Hub", Payload: payload(rng, g.PayloadBytes),
		Refs: make([]Ref, 0, g.Leaves)}
	for i := 1; i <= g.Leaves; i++ {
		hub.Refs = append(hub.Refs, Ref{Field: FieldMembers, ID: ShapeID(g.Prefix, i)})
	}
	if err := emit(hub); err != nil {
		return err
	}
	for i := 1; i <= g.Leaves; i++ {
		if err := emit(&Object{ID: ShapeID(g.Prefix, i), Version: 1, Type: "Leaf", Payload: payload(rng, g.PayloadBytes)}); err != nil {
			return err
		}
	}
	return nil
}
