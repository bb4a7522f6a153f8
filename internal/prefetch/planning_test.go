package prefetch

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/metrics"
)

// stepClock is a clock that moves only when told to.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// slowOrigin is an origin each BatchGet of which takes a second of clock.
type slowOrigin struct {
	*fakeOrigin
	clock *stepClock
}

func (o slowOrigin) BatchGet(ctx context.Context, ids []string) ([]*graph.Object, []string, error) {
	o.clock.advance(time.Second)
	return o.fakeOrigin.BatchGet(ctx, ids)
}

// slowExpander is slowOrigin with Expand, which takes a second too.
type slowExpander struct {
	*fakeExpander
	clock *stepClock
}

func (o slowExpander) BatchGet(ctx context.Context, ids []string) ([]*graph.Object, []string, error) {
	o.clock.advance(time.Second)
	return o.fakeExpander.BatchGet(ctx, ids)
}

func (o slowExpander) Expand(ctx context.Context, roots []string, known []*graph.Object, b graph.Budget,
	fn func(int, []*graph.Object, []string) error) error {
	o.clock.advance(time.Second)
	return o.fakeExpander.Expand(ctx, roots, known, b, fn)
}

// costlyChooser wants every ref, and takes clock to learn (3ms a read)
// and to estimate (1ms an object).
type costlyChooser struct {
	uniform
	clock *stepClock
}

func (c costlyChooser) ReadAt(at time.Time, objs []*graph.Object, waited bool, rtt time.Duration) []string {
	c.clock.advance(3 * time.Millisecond)
	return nil
}

func (c costlyChooser) Chances(o *graph.Object, depth int, least float64, out []float64) []float64 {
	c.clock.advance(time.Millisecond)
	return c.uniform.Chances(o, depth, least, out)
}

// What the learned planner's work costs is counted by stage, learning from
// reads and choosing what to fetch, and a job's waits for the origin are
// not choosing: the origin here takes a second a call, the planner
// milliseconds.
func TestPlanningTimeCountsTheChooserNotTheOrigin(t *testing.T) {
	for _, expand := range []bool{false, true} {
		t.Run(map[bool]string{false: "level by level", true: "whole levels"}[expand], func(t *testing.T) {
			clock := &stepClock{t: time.Unix(0, 0)}
			fo := newFakeOrigin(tree(t, 2, 4))
			var o fetch.Origin = slowOrigin{fo, clock}
			fx := &fakeExpander{Origin: fo}
			if expand {
				o = slowExpander{fx, clock}
			}
			ch := costlyChooser{uniform{eager: eager{}, p: 1, ahead: 2, near: 0.5}, clock}
			r := newRigWith(t, o, Config{Mode: ModeAdaptive}, fetch.Config{}, ch, cache.Config{})
			r.engine.s.now = clock.Now
			reads := 0
			for _, id := range []string{"task-0", "task-1", "task-2"} {
				_, _, err := r.engine.Get(context.Background(), []string{id}, Hint{})
				require.NoError(t, err)
				r.engine.s.Idle()
				reads++
			}
			if expand {
				require.Positive(t, fx.ExpandCalls(), "the jobs fetched whole levels")
			}
			learn := testutil.ToFloat64(r.m.PrefetchPlanning.WithLabelValues(metrics.StageLearn))
			choose := testutil.ToFloat64(r.m.PrefetchPlanning.WithLabelValues(metrics.StageChoose))
			require.Positive(t, testutil.ToFloat64(r.m.PrefetchIssued), "the jobs fetched, each call a second")
			assert.GreaterOrEqual(t, learn, 0.003*float64(reads), "every read learned from")
			assert.Less(t, learn, 1.0, "learning waits for no origin")
			assert.Positive(t, choose, "the jobs estimated chances")
			assert.Less(t, choose, 1.0, "the jobs' seconds at the origin are not choosing")
		})
	}
}
