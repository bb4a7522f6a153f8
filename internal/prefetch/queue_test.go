package prefetch

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lookahead-dev/lookahead/internal/graph"
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
			q := newQueue(tt.size)
			var popped []string
			var dropped []string
			next := 0
			for _, op := range tt.ops {
				if op == 'p' {
					if old, ok := q.push(named("j" + itoa(next))); ok {
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
	q := newQueue(4)
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
	q := newQueue(4)
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
	assert.False(t, q.merge(into("z")), "no job accepts")
	assert.True(t, q.merge(into("a")))
	var left [][]string
	for j, ok := q.pop(); ok; j, ok = q.pop() {
		left = append(left, j.refresh)
	}
	assert.Equal(t, [][]string{{"a", "+"}, {"c"}, {"b"}}, left, "a, folded into, runs first; the others keep their order")
}
