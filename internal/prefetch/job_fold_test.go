package prefetch

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// While the workers are busy, a client's chance jobs fold into the one it
// has queued, which runs with the roots and triggers of every read since
// and the largest budget; another client's job stays its own.
func TestChanceJobsOfOneClientFoldWhileQueued(t *testing.T) {
	fo := newFakeOrigin([]*graph.Object{node("busy"), node("p"), node("q"), node("x")})
	fo.Block["busy"] = true
	r := newRig(t, fo, Config{Mode: ModeAdaptive, Workers: 1}, fixedChooser{chance: 1, near: 0.1, far: 0.5}, cache.Config{})
	s := r.engine.s
	s.enqueue(job{refresh: []string{"busy"}})
	<-fo.Started // the one worker is busy: what is queued stays queued

	a, b := NewClient(), NewClient()
	chance := func(c *Client, o *graph.Object, max int) job {
		return job{chance: true, client: c, roots: []*graph.Object{o}, triggers: []*graph.Object{o}, budget: graph.Budget{MaxObjects: max}}
	}
	s.enqueueChance(chance(a, node("p"), 10))
	s.enqueueChance(chance(b, node("x"), 10))
	s.enqueueChance(chance(a, node("q"), 20))

	var queued []job
	s.jobs.filter(func(j *job) bool { queued = append(queued, *j); return true })
	require.Len(t, queued, 2, "a's second job folded into its first")
	ids := func(os []*graph.Object) (out []string) {
		for _, o := range os {
			out = append(out, o.ID)
		}
		return out
	}
	assert.Equal(t, b, queued[0].client, "b's job is now the older")
	assert.Equal(t, a, queued[1].client, "a's, folded into, the newest")
	assert.Equal(t, []string{"p", "q"}, ids(queued[1].roots))
	assert.Equal(t, []string{"p", "q"}, ids(queued[1].triggers))
	assert.Equal(t, 20, queued[1].budget.MaxObjects)
	close(fo.Release)
	idle(t, r)
	assert.Empty(t, s.index.held, "the folded job let go of all its triggers")
}
