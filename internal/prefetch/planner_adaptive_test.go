package prefetch

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

func TestAdaptiveDepthFollowsFetchOverProcess(t *testing.T) {
	tests := []struct {
		name    string
		fetch   time.Duration
		process time.Duration
		want    int
	}{
		{name: "fetch 4x processing: 4 levels ahead", fetch: 4 * time.Millisecond, process: time.Millisecond, want: 4},
		{name: "fetch cheaper than processing: one level", fetch: 100 * time.Microsecond, process: time.Millisecond, want: 1},
		{name: "rounds up", fetch: 2500 * time.Microsecond, process: time.Millisecond, want: 3},
		{name: "capped", fetch: time.Second, process: time.Millisecond, want: 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewAdaptive(AdaptiveConfig{})
			now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			for i := 0; i < 50; i++ {
				a.ObserveRoundTrip(tt.fetch)
				a.ObserveRequest(nil, now, now)
				now = now.Add(tt.process)
			}
			assert.Equal(t, tt.want, a.Depth())
			assert.Equal(t, tt.want, a.Budget(nil, Hint{}).Depth)
		})
	}
}

func TestAdaptiveProcessExcludesSidecarTime(t *testing.T) {
	a := NewAdaptive(AdaptiveConfig{})
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 50; i++ {
		// Every request misses (2ms in the sidecar); the application then
		// thinks for 0.5ms before the next one.
		a.ObserveRoundTrip(2 * time.Millisecond)
		a.ObserveRequest(nil, now, now.Add(2*time.Millisecond))
		now = now.Add(2500 * time.Microsecond)
	}
	assert.Equal(t, 4, a.Depth(), "POD = 2ms fetch / 0.5ms processing")
}

func TestAdaptiveIgnoresIdleGaps(t *testing.T) {
	a := NewAdaptive(AdaptiveConfig{})
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 20; i++ {
		a.ObserveRoundTrip(2 * time.Millisecond)
		a.ObserveRequest(nil, now, now)
		now = now.Add(time.Millisecond)
	}
	a.ObserveRequest(nil, now.Add(time.Hour), now.Add(time.Hour)) // the application went quiet
	assert.Equal(t, 2, a.Depth())
}

func TestAdaptiveLearnsFollowedFields(t *testing.T) {
	a := NewAdaptive(AdaptiveConfig{MinFieldSamples: 10, RefMemory: 64})
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	assert.Nil(t, a.Budget([]*graph.Object{{Type: "Order"}}, Hint{}).Fields, "nothing learned: follow all")
	for i := 0; i < 30; i++ {
		order := &graph.Object{ID: "o" + itoa(i), Type: "Order", Refs: []graph.Ref{
			{Field: "lines", ID: "l" + itoa(i)}, {Field: "audit", ID: "a" + itoa(i)}}}
		a.ObserveRequest([]*graph.Object{order}, now, now)
		// The application follows lines, never audit.
		a.ObserveRequest([]*graph.Object{{ID: "l" + itoa(i), Type: "Line"}}, now, now)
	}
	assert.Contains(t, a.Budget([]*graph.Object{{Type: "Order"}}, Hint{}).Fields, "audit",
		"audit refs not yet judged: still followed")
	for i := 0; i < 40; i++ { // enough later traffic that the audit refs are forgotten
		a.ObserveRequest([]*graph.Object{{ID: "x" + itoa(i), Type: "Other", Refs: []graph.Ref{{Field: "f", ID: "y" + itoa(i)}}}}, now, now)
	}
	assert.Equal(t, []string{"lines"}, a.Budget([]*graph.Object{{Type: "Order"}}, Hint{}).Fields)
	assert.Nil(t, a.Budget([]*graph.Object{{Type: "Line"}}, Hint{}).Fields, "other types unaffected")
	assert.Equal(t, []string{"audit"}, a.Budget([]*graph.Object{{Type: "Order"}}, Hint{Fields: []string{"audit"}}).Fields, "a hint wins")
}

func TestAdaptiveBacksOffOnLowAccuracy(t *testing.T) {
	a := NewAdaptive(AdaptiveConfig{AccuracyWindow: 100})
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 20; i++ {
		a.ObserveRoundTrip(5 * time.Millisecond)
		a.ObserveRequest(nil, now, now)
		now = now.Add(time.Millisecond)
	}
	require.Equal(t, 5, a.Depth())
	a.ObservePrefetch(100, 10) // 10% used
	assert.Equal(t, 4, a.Depth())
	a.ObservePrefetch(100, 5)
	assert.Equal(t, 3, a.Depth())
	a.ObservePrefetch(100, 90) // accuracy recovered
	assert.Equal(t, 4, a.Depth())
}

func TestAdaptiveEngineWalk(t *testing.T) {
	objs := tree(t, 3, 4)
	fo := newFakeOrigin(objs)
	a := NewAdaptive(AdaptiveConfig{})
	r := newRig(t, fo, Config{Mode: ModeAdaptive}, a, cache.Config{})
	// Between reads the application thinks for longer than speculation
	// takes: it waits until the scheduler is idle, so what is prefetched
	// does not depend on the machine's speed.
	statuses := walkByGetThinking(t, r.engine, "task-0", r.engine.s.Idle)
	misses := 0
	for _, s := range statuses {
		if s == StatusMiss {
			misses++
		}
	}
	assert.Equal(t, 1, misses, "with no settings, all but the root was prefetched")
	_, _, err := r.engine.Get(context.Background(), []string{"task-0"}, Hint{})
	require.NoError(t, err)
}
