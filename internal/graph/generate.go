package graph

import (
	"math/rand/v2"
	"strconv"
)

// EmitFunc receives each generated object. Generators stream objects through
// it so that a large dataset never has to fit in memory at once.
type EmitFunc func(*Object) error

// TaskTrees generates db4o's benchmark data: Roots independent task trees,
// each task holding Fanout subtasks, Levels levels deep (db4o's TASK_DEPTH;
// 5 levels of 5 subtasks make 781 tasks per root).
type TaskTrees struct {
	Roots        int
	Fanout       int
	Levels       int
	PayloadBytes int
	Seed         uint64
}

// TaskField is the ref field that links a task to its subtasks.
const TaskField = "subtasks"

// RootID is the id of the i-th root task.
func (g TaskTrees) RootID(i int) string { return "task-" + strconv.Itoa(i) }

// PerRoot is the number of tasks in one root's tree.
func (g TaskTrees) PerRoot() int {
	n, width := 0, 1
	for l := 0; l < g.Levels; l++ {
		n += width
		width *= g.Fanout
	}
	return n
}

// Generate emits every task, each tree in breadth-first order.
func (g TaskTrees) Generate(emit EmitFunc) error {
	rng := rand.New(rand.NewPCG(g.Seed, 0x7461736b))
	perRoot := g.PerRoot()
	for r := 0; r < g.Roots; r++ {
		root := g.RootID(r)
		// Task k of a tree (breadth-first index) has children f*k+1 .. f*k+f,
		// the layout of a complete f-ary tree stored in an array.
		for k := 0; k < perRoot; k++ {
			o := &Object{ID: taskID(root, k), Version: 1, Type: "Task", Payload: payload(rng, g.PayloadBytes)}
			for c := g.Fanout*k + 1; c <= g.Fanout*k+g.Fanout && c < perRoot; c++ {
				o.Refs = append(o.Refs, Ref{Field: TaskField, ID: taskID(root, c)})
			}
			if err := emit(o); err != nil {
				return err
			}
		}
	}
	return nil
}

func taskID(root string, k int) string {
	if k == 0 {
		return root
	}
	return root + "." + strconv.Itoa(k)
}

// RandomGraph generates N objects with random refs: cycles, self references,
// shared children and refs to objects that do not exist all occur.
type RandomGraph struct {
	N            int
	RefsPerNode  int     // refs per object, on average
	DanglingRate float64 // fraction of refs that point at no object
	PayloadBytes int
	Seed         uint64
}

// RandomFields are the ref fields RandomGraph uses.
var RandomFields = []string{"next", "owner", "related"}

// NodeID is the id of the i-th node.
func (g RandomGraph) NodeID(i int) string { return "node-" + strconv.Itoa(i) }

// Generate emits the N objects in id order.
func (g RandomGraph) Generate(emit EmitFunc) error {
	rng := rand.New(rand.NewPCG(g.Seed, 0x72616e64))
	for i := 0; i < g.N; i++ {
		o := &Object{ID: g.NodeID(i), Version: 1, Type: "Node", Payload: payload(rng, g.PayloadBytes)}
		refs := 0
		if g.RefsPerNode > 0 {
			refs = rng.IntN(2*g.RefsPerNode + 1)
		}
		for j := 0; j < refs; j++ {
			id := g.NodeID(rng.IntN(g.N))
			if rng.Float64() < g.DanglingRate {
				id = "missing-" + strconv.Itoa(rng.IntN(g.N))
			}
			o.Refs = append(o.Refs, Ref{Field: RandomFields[rng.IntN(len(RandomFields))], ID: id})
		}
		if err := emit(o); err != nil {
			return err
		}
	}
	return nil
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
