package prefetch

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

func TestStaticBudgetHonoursHint(t *testing.T) {
	s := Static{Depth: 3, MaxObjects: 100, Fields: []string{"a"}}
	zero, five := 0, 5
	tests := []struct {
		name string
		hint Hint
		want graph.Budget
	}{
		{"no hint", Hint{}, graph.Budget{Depth: 3, MaxObjects: 100, Fields: []string{"a"}}},
		{"depth 0 turns off", Hint{Depth: &zero}, graph.Budget{Depth: 0, MaxObjects: 100, Fields: []string{"a"}}},
		{"all overridden", Hint{Depth: &five, MaxObjects: &five, Fields: []string{"b"}},
			graph.Budget{Depth: 5, MaxObjects: 5, Fields: []string{"b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, s.Budget(nil, tt.hint))
		})
	}
	assert.Error(t, Static{Depth: -1}.Validate())
	assert.Error(t, Static{MaxObjects: -1}.Validate())
	assert.NoError(t, s.Validate())
}
