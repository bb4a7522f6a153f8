package postgres_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

func refsOf(o *graph.Object, field string) []string {
	var ids []string
	for _, r := range o.Refs {
		if r.Field == field {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

func TestGetBuildsObjectsFromRows(t *testing.T) {
	st, url := openShop(t)
	found, missing, err := st.Get([]string{"orders/4", "customers/1", "products/2", "orders/4", "nope/1", "orders/abc", "orders/999", "orders/04"})
	require.NoError(t, err)
	assert.Equal(t, []string{"nope/1", "orders/abc", "orders/999", "orders/04"}, missing, "unknown prefix, bad key text, no row, non-canonical key")
	require.Len(t, found, 3, "the duplicate is answered once")
	order, customer, product := found[0], found[1], found[2]

	assert.Equal(t, "orders/4", order.ID)
	assert.Equal(t, "order", order.Type)
	assert.Equal(t, uint64(1), order.Version, "a row never changed since install is at version 1")
	assert.Equal(t, []string{"customers/1"}, refsOf(order, "customer"), "order 4 is customer (4-1) mod 3 + 1")
	var items []string
	rows := queryStrings(t, url, "SELECT 'line_items/' || id FROM line_items WHERE order_id = 4 ORDER BY id")
	items = append(items, rows...)
	require.NotEmpty(t, items)
	assert.Equal(t, items, refsOf(order, "line_items"), "reverse refs in order_by order")
	var payload map[string]any
	require.NoError(t, json.Unmarshal(order.Payload, &payload))
	assert.Equal(t, "placed", payload["status"])
	assert.NotContains(t, payload, "id", "key columns are not in the default payload")
	assert.NotContains(t, payload, "customer_id", "nor forward refs' columns")

	assert.Equal(t, "customer", customer.Type)
	assert.Equal(t, []string{"orders/4", "orders/1"}, refsOf(customer, "orders"), "placed_at desc")

	var pp map[string]any
	require.NoError(t, json.Unmarshal(product.Payload, &pp))
	assert.Equal(t, map[string]any{"name": "Product 2", "price_cents": float64(137)}, pp, "the mapping's payload columns only")
	assert.Empty(t, product.Refs)
}

func TestGetOfNothing(t *testing.T) {
	st, _ := openShop(t)
	found, missing, err := st.Get([]string{"nope"})
	require.NoError(t, err)
	assert.Empty(t, found)
	assert.Equal(t, []string{"nope"}, missing)
}

func queryStrings(t *testing.T, url, sql string) []string {
	t.Helper()
	ctx := testCtx(t)
	conn := connect(t, url)
	rows, err := conn.Query(ctx, sql)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}
