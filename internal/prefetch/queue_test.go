package prefetch

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
)

func TestQueueNewestFirstDropsOldest(t *testing.T) {
	named := func(id string) job { return job{refresh: []string{id}} }
	tests := []struct {
		name        string
		size        int
		ops         string // p = push the next name, o = pop
		wantPopped  []string
		wantDropped []string // the jobs a full queue dropped, in order
		wantLeft    []string // popped at the end, newest first
	}{
		{name: "newest first", size: 4, ops: "ppp", wantLeft: []string{"j2", "j1", "j0"}},
		{name: "full drops the oldest", size: 2, ops: "pppp", wantDropped: []string{"j0", "j1"}, wantLeft: []string{"j3", "j2"}},
		{name: "pops between pushes", size: 2, ops: "ppoppo", wantPopped: []string{"j1", "j3"}, wantDropped: []string{"j0"}, wantLeft: []string{"j2"}},
		{name: "wraps around the ring", size: 3, ops: "pppoopppp", wantPopped: []string{"j2", "j1"}, wantDropped: []string{"j0", "j3"}, wantLeft: []string{"j6", "j5", "j4"}},
		{name: "empty pops nothing", size: 1, ops: "o"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newQueue(tt.size, noByteBound)
			var popped []string
			var dropped []string
			next := 0
			for _, op := range tt.ops {
				if op == 'p' {
					for _, old := range q.push(named("j" + itoa(next))) {
						dropped = append(dropped, old.refresh[0])
					}
					next++
					continue
				}
				if j, ok := q.pop(); ok {
					popped = append(popped, j.refresh[0])
				}
			}
			var left []string
			for j, ok := q.pop(); ok; j, ok = q.pop() {
				left = append(left, j.refresh[0])
			}
			assert.Equal(t, tt.wantPopped, popped, "popped")
			assert.Equal(t, tt.wantDropped, dropped, "dropped")
			assert.Equal(t, tt.wantLeft, left, "left")
		})
	}
}

func TestQueueSignalsWhileJobsWait(t *testing.T) {
	q := newQueue(4, noByteBound)
	assert.Len(t, q.ready, 0, "empty: no token")
	q.push(job{roots: []*graph.Object{{ID: "a"}}})
	q.push(job{roots: []*graph.Object{{ID: "b"}}})
	<-q.ready // a worker takes the token
	_, ok := q.pop()
	assert.True(t, ok)
	assert.Len(t, q.ready, 1, "one job still waits: the token is back for the next worker")
	<-q.ready
	_, ok = q.pop()
	assert.True(t, ok)
	assert.Len(t, q.ready, 0, "nothing waits: no token")
}

// merge folds into the newest job it accepts, which becomes the newest;
// when it accepts none, the queue is as it was.
func TestQueueMergeMakesTheJobItFoldsIntoTheNewest(t *testing.T) {
	q := newQueue(4, noByteBound)
	for _, id := range []string{"a", "b", "c"} {
		q.push(job{refresh: []string{id}})
	}
	into := func(id string) func(*job) bool {
		return func(old *job) bool {
			if old.refresh[0] != id {
				return false
			}
			old.refresh = append(old.refresh, "+")
			return true
		}
	}
	plus := job{refresh: []string{"+"}}
	merged, _ := q.merge(&plus, into("z"))
	assert.False(t, merged, "no job accepts")
	merged, _ = q.merge(&plus, into("a"))
	assert.True(t, merged)
	var left [][]string
	for j, ok := q.pop(); ok; j, ok = q.pop() {
		left = append(left, j.refresh)
	}
	assert.Equal(t, [][]string{{"a", "+"}, {"c"}, {"b"}}, left, "a, folded into, runs first; the others keep their order")
}

// noByteBound is a queue's maxBytes that no test's jobs reach.
const noByteBound = 1 << 62

// sized is an object with id whose Size is n.
func sized(t *testing.T, id string, n int64) *graph.Object {
	t.Helper()
	return padded(t, &graph.Object{ID: id}, n)
}

// padded gives o a payload that makes its Size n, and returns it.
func padded(t *testing.T, o *graph.Object, n int64) *graph.Object {
	t.Helper()
	o.Payload = make([]byte, n-o.Size())
	require.Equal(t, n, o.Size())
	return o
}

// A queue full by bytes drops its oldest jobs, as many as it takes for the
// newest to fit; a job larger than the whole budget is queued alone, and
// the next job pushed drops it. Each object counts once per job, in its
// roots and triggers both.
func TestQueueOverItsBytesDropsOldest(t *testing.T) {
	small := func(id string) job {
		o := sized(t, id, 1000)
		return job{roots: []*graph.Object{o}, triggers: []*graph.Object{o}}
	}
	wide := func(id string, roots int) job {
		j := job{}
		for i := range roots {
			j.roots = append(j.roots, sized(t, id+itoa(i), 1000))
		}
		j.triggers = j.roots[:1]
		return j
	}
	name := func(j job) string { return j.roots[0].ID }
	q := newQueue(10, 2500)
	steps := []struct {
		push        job
		wantDropped []string
		wantHeld    int64
	}{
		{push: small("a"), wantHeld: 1000},
		{push: small("b"), wantHeld: 2000},
		{push: small("c"), wantDropped: []string{"a"}, wantHeld: 2000},
		{push: wide("d", 2), wantDropped: []string{"b", "c"}, wantHeld: 2000},
		{push: wide("e", 3), wantDropped: []string{"d0"}, wantHeld: 3000}, // larger than the budget: alone
		{push: small("f"), wantDropped: []string{"e0"}, wantHeld: 1000},
	}
	for i, st := range steps {
		var dropped []string
		for _, old := range q.push(st.push) {
			dropped = append(dropped, name(old))
		}
		assert.Equal(t, st.wantDropped, dropped, "step %d: dropped", i)
		assert.Equal(t, st.wantHeld, q.held(), "step %d: bytes held", i)
	}
	j, ok := q.pop()
	require.True(t, ok)
	assert.Equal(t, "f", name(j))
	assert.Zero(t, q.held(), "empty")
}

// A job folded into another is charged to it: the queue holds the sum, and
// when that goes over its bytes the oldest other jobs are dropped, never
// the one folded into.
func TestQueueMergeChargesTheFoldAndDropsOldest(t *testing.T) {
	one := func(id string) job {
		o := sized(t, id, 1000)
		return job{roots: []*graph.Object{o}, triggers: []*graph.Object{o}}
	}
	fold := func(old *job) bool {
		if old.roots[0].ID != "c" {
			return false
		}
		old.roots = append(old.roots, sized(t, "more", 1000))
		return true
	}
	q := newQueue(10, 3500)
	for _, id := range []string{"a", "b", "c"} {
		q.push(one(id))
	}
	require.Equal(t, int64(3000), q.held())
	add := one("more")
	merged, dropped := q.merge(&add, fold)
	require.True(t, merged)
	require.Len(t, dropped, 1)
	assert.Equal(t, "a", dropped[0].roots[0].ID, "the oldest, to make room")
	assert.Equal(t, int64(3000), q.held(), "b's 1000 and c's 2000")
	j, ok := q.pop()
	require.True(t, ok)
	assert.Equal(t, []string{"c", "more"}, []string{j.roots[0].ID, j.roots[1].ID})
	assert.Equal(t, int64(1000), q.held())
}

// A job is charged its ids too, with their headers: a refresh or a
// CaughtUp job holds no object, only ids.
func TestQueueChargesIDs(t *testing.T) {
	q := newQueue(4, noByteBound)
	q.push(job{refresh: []string{"abc", "de"}})
	q.push(job{ahead: []string{"f"}})
	assert.Equal(t, int64(3+2+1+3*idOverhead), q.held())
}

// What pop and filter take out leaves the bytes held; filter may change a
// job's triggers (preempt's overtake does), which leaves its charge.
func TestQueueKeepsItsBytesThroughFilterAndPop(t *testing.T) {
	q := newQueue(8, noByteBound)
	for i, n := range []int64{1000, 2000, 3000, 4000} {
		o, p := sized(t, "a"+itoa(i), n), sized(t, "b"+itoa(i), 500)
		q.push(job{roots: []*graph.Object{o, p}, triggers: []*graph.Object{o, p}})
	}
	require.Equal(t, int64(1000+2000+3000+4000+4*500), q.held())
	dropped := q.filter(func(j *job) bool {
		j.triggers = j.triggers[1:] // as overtake would: the roots stay
		return j.roots[0].ID != "a1"
	})
	assert.Equal(t, 1, dropped)
	assert.Equal(t, int64(1000+3000+4000+3*500), q.held(), "the dropped job's bytes are given back")
	j, ok := q.pop()
	require.True(t, ok)
	assert.Equal(t, "a3", j.roots[0].ID)
	assert.Equal(t, int64(1000+3000+2*500), q.held())
	q.filter(func(*job) bool { return false })
	assert.Zero(t, q.held())
}

// An object decoded from the wire is charged in constant time, at least
// its Size; one built otherwise, its Size.
func TestSizeBoundIsAtLeastSize(t *testing.T) {
	built := hub("h", 100)
	built.Payload = []byte("payload")
	assert.Equal(t, built.Size(), sizeBound(built))
	wire, err := graphpb.Encoded(built)
	require.NoError(t, err)
	decoded, err := graphpb.Decode(wire)
	require.NoError(t, err)
	assert.Equal(t, built.Size(), decoded.Size())
	assert.GreaterOrEqual(t, sizeBound(decoded), decoded.Size())
	assert.Less(t, sizeBound(decoded), decoded.Size()+int64(len(wire))/2, "beyond Size, only the tags: a few bytes a ref")
}
