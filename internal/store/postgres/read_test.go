package postgres_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/store/postgres"
	"github.com/lookahead-dev/lookahead/internal/store/postgres/pgtest"
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

func TestGetWithCompositeAndTextKeys(t *testing.T) {
	url := pgtest.NewDB(t)
	exec(t, url, `CREATE TABLE shelves (code text PRIMARY KEY, label text);
		CREATE TABLE slots (shelf text REFERENCES shelves, pos int, item text, PRIMARY KEY (shelf, pos));
		INSERT INTO shelves VALUES ('a/1', 'first'), ('b', 'second');
		INSERT INTO slots VALUES ('a/1', 1, 'x'), ('a/1', 2, 'y'), ('b', 1, 'z')`)
	m, err := postgres.ParseMapping([]byte(`
types:
  - name: shelf
    table: shelves
    id: "shelves:{code}"
    reverse: [{field: slots, type: slot, columns: [shelf], order_by: [pos desc]}]
  - name: slot
    table: slots
    id: "slots:{shelf}#{pos}"
    refs: [{field: shelf, type: shelf, columns: [shelf]}]
`))
	require.NoError(t, err)
	require.NoError(t, postgres.Install(testCtx(t), url, m))
	st, err := postgres.Open(testCtx(t), postgres.Config{URL: url, Mapping: m})
	require.NoError(t, err)
	defer st.Close()

	found, missing, err := st.Get([]string{"slots:a/1#2", "shelves:a/1", "slots:b#1", "slots:b#x", "slots:a/1#9"})
	require.NoError(t, err)
	assert.Equal(t, []string{"slots:b#x", "slots:a/1#9"}, missing)
	require.Len(t, found, 3)
	assert.Equal(t, "slots:a/1#2", found[0].ID)
	assert.Equal(t, []string{"shelves:a/1"}, refsOf(found[0], "shelf"))
	assert.JSONEq(t, `{"item":"y"}`, string(found[0].Payload))
	assert.Equal(t, []string{"slots:a/1#2", "slots:a/1#1"}, refsOf(found[1], "slots"))
	assert.Equal(t, "slots:b#1", found[2].ID)

	exec(t, url, "UPDATE slots SET item = 'w' WHERE shelf = 'b' AND pos = 1")
	awaitRevision(t, st, 2)
	cs, err := st.Changes(0, 0)
	require.NoError(t, err)
	require.Len(t, cs, 2)
	assert.Equal(t, "slots:b#1", cs[0].ID)
	assert.Equal(t, "shelves:b", cs[1].ID, "its shelf's refs may have changed")
}
