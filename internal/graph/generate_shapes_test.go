package graph_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// byID indexes objs and fails on a duplicate id.
func byID(t *testing.T, objs []*graph.Object) map[string]*graph.Object {
	t.Helper()
	m := map[string]*graph.Object{}
	for _, o := range objs {
		require.NotContains(t, m, o.ID, "id emitted twice")
		m[o.ID] = o
	}
	return m
}

func TestChainLinksEachObjectToTheNext(t *testing.T) {
	objs := generated(t, graph.Chain{Prefix: "c", N: 4, PayloadBytes: 8, Seed: 1}.Generate)
	require.Len(t, objs, 4)
	for i, o := range objs {
		assert.Equal(t, graph.ShapeID("c", i), o.ID)
		assert.Len(t, o.Payload, 8)
	}
	assert.Equal(t, []graph.Ref{{Field: graph.FieldNext, ID: "c-1"}}, objs[0].Refs)
	assert.Equal(t, []graph.Ref{{Field: graph.FieldNext, ID: "c-3"}}, objs[2].Refs)
	assert.Empty(t, objs[3].Refs, "the tail refers to nothing")
}

func TestDiamondsRefersOnlyToTheLayerBelow(t *testing.T) {
	g := graph.Diamonds{Prefix: "d", Layers: 4, Width: 5, Refs: 3, Seed: 1}
	objs := generated(t, g.Generate)
	require.Len(t, objs, g.Len())
	require.Equal(t, 21, g.Len())
	m := byID(t, objs)
	layer := func(id string) int { // the root is layer -1
		for i := 0; i < g.Len(); i++ {
			if graph.ShapeID("d", i) == id {
				return (i+4)/5 - 1
			}
		}
		t.Fatalf("ref to %s outside the DAG", id)
		return 0
	}
	parents := map[string]int{}
	for _, o := range objs {
		if layer(o.ID) == 3 {
			assert.Empty(t, o.Refs, "%s: the last layer refers to nothing", o.ID)
			continue
		}
		require.Len(t, o.Refs, 3, o.ID)
		seen := map[string]bool{}
		for _, r := range o.Refs {
			assert.Equal(t, graph.FieldChildren, r.Field)
			assert.Equal(t, layer(o.ID)+1, layer(r.ID), "%s → %s skips a layer", o.ID, r.ID)
			assert.False(t, seen[r.ID], "%s refers to %s twice", o.ID, r.ID)
			seen[r.ID] = true
			parents[r.ID]++
			assert.Contains(t, m, r.ID)
		}
	}
	shared := 0
	for _, n := range parents {
		if n > 1 {
			shared++
		}
	}
	assert.Greater(t, shared, 5, "3 refs into a layer of 5 share most objects: diamonds")
}

func TestDiamondsCapsRefsAtTheWidth(t *testing.T) {
	objs := generated(t, graph.Diamonds{Prefix: "d", Layers: 2, Width: 2, Refs: 9, Seed: 1}.Generate)
	assert.Len(t, objs[0].Refs, 2)
}

func TestStarHubRefersToEveryLeaf(t *testing.T) {
	objs := generated(t, graph.Star{Prefix: "s", Leaves: 1000, Seed: 1}.Generate)
	require.Len(t, objs, 1001)
	m := byID(t, objs)
	hub := objs[0]
	assert.Equal(t, "s-0", hub.ID)
	require.Len(t, hub.Refs, 1000)
	for i, r := range hub.Refs {
		assert.Equal(t, graph.Ref{Field: graph.FieldMembers, ID: graph.ShapeID("s", i+1)}, r)
		assert.Empty(t, m[r.ID].Refs)
	}
}

func TestShapesAreDeterministic(t *testing.T) {
	for name, gen := range map[string]func(graph.EmitFunc) error{
		"chain":    graph.Chain{Prefix: "c", N: 5, PayloadBytes: 4, Seed: 1}.Generate,
		"diamonds": graph.Diamonds{Prefix: "d", Layers: 3, Width: 6, Refs: 2, Seed: 1}.Generate,
		"star":     graph.Star{Prefix: "s", Leaves: 5, PayloadBytes: 4, Seed: 1}.Generate,
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, generated(t, gen), generated(t, gen))
		})
	}
}
