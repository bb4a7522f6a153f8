package knafla

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

func dataset(t *testing.T, d Dataset) map[string]*graph.Object {
	t.Helper()
	objs := map[string]*graph.Object{}
	require.NoError(t, d.Generate(func(o *graph.Object) error {
		require.NoError(t, o.Validate())
		objs[o.ID] = o
		return nil
	}))
	return objs
}

func TestPageShape(t *testing.T) {
	objs := dataset(t, Dataset{Pages: 10, PayloadBytes: 8, Seed: 1})
	require.Len(t, objs, 10*PageObjects)
	types := map[string]int{}
	for _, o := range objs {
		if p, _ := PageOf(o.ID); p == 3 {
			types[o.Type]++
		}
	}
	assert.Equal(t, map[string]int{TypeOutRef: 16, TypeBranch: 1 + 2 + 4 + 8, TypeNormal: 112 - 16 - 15}, types)

	// Every path from the entry has 15 objects before its Out-Ref object.
	var depths func(id string, d int)
	depths = func(id string, d int) {
		o := objs[id]
		require.NotNil(t, o, id)
		if o.Type == TypeOutRef {
			assert.Equal(t, 15, d, "objects before %s", id)
			require.Len(t, o.Refs, 3)
			for _, r := range o.Refs {
				q, err := PageOf(r.ID)
				require.NoError(t, err)
				assert.NotEqual(t, 3, q)
				assert.Contains(t, objs, r.ID)
			}
			return
		}
		for _, r := range o.Refs {
			depths(r.ID, d+1)
		}
	}
	depths(EntryID(3), 0)
}

func TestNavigate(t *testing.T) {
	objs := dataset(t, Dataset{Pages: 200, Seed: 2})
	get := func(_ context.Context, id string) (*graph.Object, error) { return objs[id], nil }
	for follow := 1; follow <= 3; follow++ {
		n := Navigation{Follow: follow, Pages: 50, Start: 7, TotalPages: 200, Seed: 9}
		thinks := 0
		st, err := Navigate(context.Background(), n, get, func() { thinks++ })
		require.NoError(t, err)
		assert.Equal(t, 50, st.Pages)
		assert.Equal(t, 50*16, st.Objects, "one path of 16 objects per page")
		assert.Equal(t, st.Objects, thinks)
		again, err := Navigate(context.Background(), n, get, nil)
		require.NoError(t, err)
		assert.Equal(t, st, again, "deterministic")
	}
}
