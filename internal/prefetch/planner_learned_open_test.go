package prefetch

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

func openIDs(s *openLists) [][]string {
	out := make([][]string, len(s.byDepth))
	for d, q := range s.byDepth {
		for _, o := range q {
			out[d] = append(out[d], o.id)
		}
	}
	return out
}

// A follow closes the lists read before its parent at its depth or deeper,
// the parent's own (read again) excepted; shallower ones, and those read
// since, stay open, each depth in read order.
func TestOpenListsCloseBefore(t *testing.T) {
	var s openLists
	for i, d := range []int{0, 1, 2, 1, 7, 2, 1} {
		s.add(&openList{id: fmt.Sprint("o", i), depth: d, seq: i})
	}
	s.add(&openList{id: "o3", depth: 1, seq: 7}) // o3 read again
	var closed []string
	s.closeBefore(5, 1, func(o *openList) bool { return o.id == "o3" }, func(o *openList) { closed = append(closed, o.id) })
	assert.ElementsMatch(t, []string{"o1", "o2", "o4"}, closed)
	assert.Equal(t, [][]string{{"o0"}, {"o3", "o6", "o3"}, {"o5"}, nil, nil}, openIDs(&s))
	assert.Nil(t, s.latest("o1"))
	assert.Equal(t, 7, s.latest("o3").seq, "the latest list of an id")

	s.move(s.latest("o0"), 1) // read again one level down
	assert.Equal(t, [][]string{nil, {"o0", "o3", "o6", "o3"}, {"o5"}, nil, nil}, openIDs(&s), "in read order")
	assert.Equal(t, []string{"o3", "o6", "o3", "o0"}, func() (ids []string) {
		for _, o := range s.unstarted(1, 4) {
			ids = append(ids, o.id)
		}
		return ids
	}(), "the latest first")
	s.expire(5)
	assert.Equal(t, [][]string{nil, {"o6", "o3"}, nil, nil, nil}, openIDs(&s))
}

// BenchmarkLearnedBreadthFirst reads a tree of fan-out 8 level by level,
// as a breadth-first walk does, a fresh walk after its 4,681 objects: each
// follow closes the lists passed by, with hundreds open.
func BenchmarkLearnedBreadthFirst(b *testing.B) {
	const fan = 8
	var order []*graph.Object
	level := []string{"t"}
	for range 4 {
		var next []string
		for _, id := range level {
			o := &graph.Object{ID: id, Type: "Task"}
			for i := range fan {
				o.Refs = append(o.Refs, graph.Ref{Field: "subtasks", ID: fmt.Sprint(id, ".", i)})
				next = append(next, o.Refs[i].ID)
			}
			order = append(order, o)
		}
		level = next
	}
	l := NewLearned(LearnedConfig{})
	b.ResetTimer()
	for i := range b.N {
		l.Read(order[i%len(order):i%len(order)+1], false, 0)
	}
}
