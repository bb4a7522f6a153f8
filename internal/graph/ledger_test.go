package graph_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// A ledger admits by Reach's rules and keeps what was recorded of an id
// when the id is met again (a cycle, a shared child): admitting it again
// must neither erase the record nor charge the budget.
func TestLedgerKeepsRecordsByReachsRules(t *testing.T) {
	l := graph.NewLedger(graph.Budget{Depth: 1, MaxObjects: 3, Fields: []string{"sub"}}, 0)
	a := &graph.Object{ID: "a"}
	assert.True(t, l.Admit("a"))
	o, admitted := l.Get("a")
	assert.True(t, admitted)
	assert.Nil(t, o, "admitted, nothing recorded yet")
	l.Record("a", a)
	assert.False(t, l.Admit("a"), "admitted once")
	o, _ = l.Get("a")
	assert.Same(t, a, o, "admitting again keeps the record")
	assert.Equal(t, 2, l.Remaining())

	assert.True(t, l.Admit("b"))
	assert.True(t, l.Admit("c"))
	assert.False(t, l.Admit("d"), "MaxObjects spent")
	_, admitted = l.Get("d")
	assert.False(t, admitted)

	var recorded []string
	l.Recorded(func(id string, _ *graph.Object) { recorded = append(recorded, id) })
	assert.Equal(t, []string{"a"}, recorded, "only ids with a record")
	assert.True(t, l.Follows("sub"))
	assert.False(t, l.Follows("other"))
	assert.True(t, l.Expands(0))
	assert.False(t, l.Expands(1))
}
