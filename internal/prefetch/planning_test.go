package prefetch

import (
	"context"
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

// slowOrigin is an origin each BatchGet of which takes a second of clock.
type slowOrigin struct {
	*fakeOrigin
	clock *clock
}

func (o slowOrigin) BatchGet(ctx context.Context, ids []string) ([]*graph.Object, []string, error) {
	o.clock.Add(time.Second)
	return o.fakeOrigin.BatchGet(ctx, ids)
}

// slowExpander is slowOrigin with x's Expand, which takes a second too.
type slowExpander struct {
	slowOrigin
	x *fakeExpander
}

func (o slowExpander) Expand(ctx context.Context, roots []string, known []*graph.Object, b graph.Budget,
	fn func(int, []*graph.Object, []string) error) error {
	o.clock.Add(time.Second)
	return o.x.Expand(ctx, roots, known, b, fn)
}

// costlyChooser wants every ref, and takes clock to learn (3ms a read)
// and to estimate (1ms an object).
type costlyChooser struct {
	uniform
	clock *clock
}

func (c costlyChooser) ReadAt(at time.Time, objs []*graph.Object, waited bool, rtt time.Duration) []string {
	c.clock.Add(3 * time.Millisecond)
	return nil
}

func (c costlyChooser) Chances(o *graph.Object, depth int, least float64, out []float64) []float64 {
	c.clock.Add(time.Millisecond)
	return c.uniform.Chances(o, depth, least, out)
}

// What the learned planner's work costs is counted by stage, learning from
// reads and choosing what to fetch, and a job's waits for the origin are
// not choosing: the origin here takes a second a call, the planner
// milliseconds. One worker, so that no job's origin call moves the clock
// while another job chooses; the learner's time can take in the start of
// the job it queued (the clock is everyone's), so only its least is
// asserted.
func TestPlanningTimeCountsTheChooserNotTheOrigin(t *testing.T) {
	for _, expand := range []bool{false, true} {
		t.Run(map[bool]string{false: "level by level", true: "whole levels"}[expand], func(t *testing.T) {
			clk := &clock{now: time.Unix(0, 0)}
			fo := newFakeOrigin(tree(t, 2, 4))
			var o fetch.Origin = slowOrigin{fo, clk}
			fx := &fakeExpander{Origin: fo}
			if expand {
				o = slowExpander{slowOrigin{fo, clk}, fx}
			}
			ch := costlyChooser{uniform{eager: eager{}, p: 1, ahead: 2, near: 0.5}, clk}
			r := newRigWith(t, o, Config{Mode: ModeAdaptive, Workers: 1}, fetch.Config{}, ch, cache.Config{})
			r.engine.s.now = clk.Now
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
			assert.Positive(t, choose, "the jobs estimated chances")
			assert.Less(t, choose, 1.0, "the jobs' seconds at the origin are not choosing")
		})
	}
}
