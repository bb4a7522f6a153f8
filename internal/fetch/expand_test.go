package fetch

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch/fetchtest"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// A speculative Expand far larger than the prefetch tier must not hold the
// payloads it streamed through: the cache bounds them, not the expansion.
func TestSpeculativeExpansionKeepsNoPayloads(t *testing.T) {
	var objs []*graph.Object
	require.NoError(t, graph.TaskTrees{Roots: 1, Fanout: 5, Levels: 4, PayloadBytes: 1024}.Generate(func(o *graph.Object) error {
		objs = append(objs, o)
		return nil
	}))
	fx := &fetchtest.Expander{Origin: fetchtest.NewOrigin(objs)}
	r := newRig(t, fx, Config{}, cache.Config{PrefetchBytes: 16 << 10})
	for _, speculative := range []bool{true, false} {
		r.f.Clear()
		x := r.f.NewExpansion([]string{"task-0"}, graph.Budget{Depth: 3}, speculative)
		require.Empty(t, x.joins)
		require.NoError(t, x.Run(context.Background()))
		var payload int
		for _, o := range x.got {
			payload += len(o.Payload)
		}
		assert.Len(t, x.got, len(objs), "speculative %v: every object's refs, for the plan", speculative)
		if speculative {
			assert.Zero(t, payload)
		} else {
			assert.Equal(t, len(objs)*1024, payload, "a walk's Expand keeps what it must still emit")
		}
		assert.Empty(t, x.owned, "released, objects and all, at the end of each level")
		assert.Empty(t, x.claims)
	}
}
