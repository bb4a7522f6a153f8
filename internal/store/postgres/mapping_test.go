package postgres_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/store/postgres"
)

func TestParseMappingRejectsBadMappings(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"no types", "types: []", "no types"},
		{"unknown key", "types: [{name: a, table: a, id: 'a/{id}', colour: red}]", "field colour not found"},
		{"id without literal prefix", "types: [{name: a, table: a, id: '{id}'}]", "must start with literal text"},
		{"id without placeholder", "types: [{name: a, table: a, id: 'a/'}]", "no {column} placeholder"},
		{"adjacent placeholders", "types: [{name: a, table: a, id: 'a/{x}{y}'}]", "separated by literal text"},
		{"overlapping prefixes", "types: [{name: a, table: a, id: 'a/{id}'}, {name: b, table: b, id: 'a/b/{id}'}]", "overlaps"},
		{"unknown ref type", "types: [{name: a, table: a, id: 'a/{id}', refs: [{field: f, type: z, columns: [z_id]}]}]", `unknown type "z"`},
		{"ref column count", "types: [{name: a, table: a, id: 'a/{id}', refs: [{field: f, type: a, columns: [x, y]}]}]", "2 columns for type \"a\"'s 1 key columns"},
		{"bad order_by", "types: [{name: a, table: a, id: 'a/{id}', reverse: [{field: f, type: a, columns: [p], order_by: [x up]}]}]", "order_by \"x up\""},
		{"duplicate field", "types: [{name: a, table: a, id: 'a/{id}', refs: [{field: f, type: a, columns: [p]}], reverse: [{field: f, type: a, columns: [p]}]}]", `ref field "f" defined twice`},
		{"encoding", "types: [{name: a, table: a, id: 'a/{id}', encoding: xml}]", "only json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := postgres.ParseMapping([]byte(tc.yaml))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestParseMappingDefaults(t *testing.T) {
	m, err := postgres.ParseMapping([]byte("types: [{name: a, table: a, id: 'a/{k1}-{k2}', reverse: [{field: kids, type: a, columns: [p1, p2]}]}]"))
	require.NoError(t, err)
	assert.Equal(t, "lookahead", m.ChangeLog)
	assert.Equal(t, "json", m.Types[0].Encoding)
	assert.Equal(t, 1000, m.Types[0].Reverse[0].Limit)
}
