package postgres_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/store/postgres"
	"github.com/lookahead-dev/lookahead/internal/store/postgres/shop"
)

func shopMapping(t *testing.T) []byte { t.Helper(); return shop.Mapping }

func TestIntrospectWritesAMappingThatServes(t *testing.T) {
	url, _ := newShop(t, false)
	exec(t, url, "CREATE TABLE audit (at timestamptz)")
	out, err := postgres.Introspect(testCtx(t), url, nil)
	require.NoError(t, err)
	assert.Contains(t, string(out), "# Tables without a primary key, not mapped: public.audit")
	m, err := postgres.ParseMapping(out)
	require.NoError(t, err, "%s", out)

	byName := map[string]postgres.Type{}
	for _, ty := range m.Types {
		byName[ty.Name] = ty
	}
	require.Len(t, byName, 4)
	assert.Equal(t, "orders/{id}", byName["orders"].ID)
	assert.Equal(t, []postgres.Ref{{Field: "order", Type: "orders", Columns: []string{"order_id"}}, {Field: "product", Type: "products", Columns: []string{"product_id"}}},
		byName["line_items"].Refs)
	assert.Equal(t, []postgres.Reverse{{Field: "orders", Type: "orders", Columns: []string{"customer_id"}, Limit: 100}}, byName["customers"].Reverse)

	require.NoError(t, postgres.Install(testCtx(t), url, m))
	st, err := postgres.Open(testCtx(t), postgres.Config{URL: url, Mapping: m})
	require.NoError(t, err)
	defer st.Close()
	found, _, err := st.Get([]string{"orders/2"})
	require.NoError(t, err)
	require.Len(t, found, 1)
	assert.Equal(t, []string{"customers/2"}, refsOf(found[0], "customer"))
	assert.NotEmpty(t, refsOf(found[0], "line_items"))
}
