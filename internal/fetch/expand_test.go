package fetch

import (
	"context"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch/fetchtest"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
)

// A speculative Expand far larger than the prefetch tier must not hold the
// payloads it streamed through: the cache bounds them, not the expansion.
func TestSpeculativeExpansionKeepsNoPayloads(t *testing.T) {
	var objs []*graph.Object
	require.NoError(t, graph.TaskTrees{Roots: 1, Fanout: 5, Levels: 4, PayloadBytes: 1024}.Generate(func(o *graph.Object) error {
		// As the origin client hands them over: decoded from their bytes,
		// their strings and payload views of them.
		b, err := proto.Marshal(graphpb.ToProto(o))
		if err != nil {
			return err
		}
		o, err = graphpb.Decode(b)
		objs = append(objs, o)
		return err
	}))
	wires := map[string][]byte{}
	for _, o := range objs {
		wires[o.ID] = o.Wire
	}
	fx := &fetchtest.Expander{Origin: fetchtest.NewOrigin(objs)}
	r := newRig(t, fx, Config{}, cache.Config{PrefetchBytes: 16 << 10})
	for _, speculative := range []bool{true, false} {
		r.f.Clear()
		x := r.f.NewExpansion([]string{"task-0"}, graph.Budget{Depth: 3}, speculative)
		require.Empty(t, x.joins)
		require.NoError(t, x.Run(context.Background()))
		var payload int
		var got []*graph.Object
		x.ids.Recorded(func(_ string, o *graph.Object) {
			payload += len(o.Payload)
			got = append(got, o)
		})
		assert.Len(t, got, len(objs), "speculative %v: every object's refs, for the plan", speculative)
		if speculative {
			assert.Zero(t, payload)
			for _, o := range got {
				assert.False(t, pins(o, wires), "%s: what a speculative expansion keeps holds no view of an object's bytes", o.ID)
			}
		} else {
			assert.Equal(t, len(objs)*1024, payload, "a walk's Expand keeps what it must still emit")
		}
		assert.Empty(t, x.owned, "released, objects and all, at the end of each level")
		assert.Empty(t, x.claims)
	}
}

// pins reports whether a string of o lies within the bytes of one of wires.
func pins(o *graph.Object, wires map[string][]byte) bool {
	strs := []string{o.ID}
	for _, r := range o.Refs {
		strs = append(strs, r.Field, r.ID)
	}
	for _, w := range wires {
		lo, hi := uintptr(unsafe.Pointer(unsafe.SliceData(w))), uintptr(unsafe.Pointer(unsafe.SliceData(w)))+uintptr(len(w))
		for _, s := range strs {
			if p := uintptr(unsafe.Pointer(unsafe.StringData(s))); len(s) > 0 && p >= lo && p < hi {
				return true
			}
		}
	}
	return false
}
