package prefetch

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// fixedChooser gives every ref the same chance, a lower least chance within
// the levels ahead than beyond them, and reads return parents.
type fixedChooser struct {
	Static
	chance, near, far float64
	parents           []string
}

func (c fixedChooser) Threshold() float64                 { return c.far }
func (c fixedChooser) Limits() (int, int)                 { return 2, 100 }
func (c fixedChooser) Ahead(time.Duration) (int, float64) { return 1, c.near }
func (fixedChooser) Distance(time.Duration) int           { return 1 }
func (c fixedChooser) Followed(float64) []string          { return nil }
func (c fixedChooser) Depth(string) int                   { return 0 }
func (c fixedChooser) ReadAt(time.Time, []*graph.Object, bool, time.Duration) (parents []string) {
	return c.parents
}
func (c fixedChooser) Chances(o *graph.Object, _ int, _ float64, out []float64) []float64 {
	out = out[:0]
	for range o.Refs {
		out = append(out, c.chance)
	}
	return out
}

// learnt waits until the learner has taken every reading handed to it
// (see choose), without waiting for the jobs it queued.
func (s *Scheduler) learnt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.learning.Load() > 0 && s.ctx.Err() == nil {
		s.idle.Wait()
	}
}

// A hit queues a chance job only when the job would take something: a ref
// of an object read whose chance reaches the least threshold of a level, or
// a list the read made likelier. Otherwise the job would end at its first
// level, and the hit would have paid for its queueing and a worker for its
// setup.
func TestHitQueuesAChanceJobOnlyWhenItHasSomethingToTake(t *testing.T) {
	withRefs, leaf := node("p", "p.1", "p.2"), node("leaf")
	tests := []struct {
		name    string
		c       fixedChooser
		read    *graph.Object
		wantJob bool
	}{
		{"a leaf", fixedChooser{chance: 1, near: 0.1, far: 0.5}, leaf, false},
		{"refs below every threshold", fixedChooser{chance: 0.05, near: 0.1, far: 0.5}, withRefs, false},
		{"refs within the levels ahead", fixedChooser{chance: 0.2, near: 0.1, far: 0.5}, withRefs, true},
		{"a leaf read from a list", fixedChooser{chance: 0, near: 0.1, far: 0.5, parents: []string{"p"}}, leaf, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fo := newFakeOrigin([]*graph.Object{node("busy"), withRefs, leaf})
			fo.Block["busy"] = true
			r := newRig(t, fo, Config{Mode: ModeAdaptive, Workers: 1}, tt.c, cache.Config{})
			s := r.engine.s
			s.enqueue(job{refresh: []string{"busy"}})
			<-fo.Started // the one worker is busy: what is queued stays queued
			s.After(context.Background(), &fetch.Answer{Results: []fetch.Result{{Object: tt.read, Status: fetch.StatusHit}}}, Hint{})
			s.learnt()
			assert.Equal(t, map[bool]int{false: 0, true: 1}[tt.wantJob], s.jobs.len(), "jobs queued")
		})
	}
}
