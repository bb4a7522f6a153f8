package postgres_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/store"
)

func u64(v uint64) *uint64 { return &v }

func TestPutAndDeleteWithExpectedVersions(t *testing.T) {
	st, url := openShop(t)
	o := &graph.Object{
		ID:      "orders/100",
		Payload: []byte(`{"status":"new","placed_at":"2026-02-01T00:00:00Z"}`),
		Refs:    []graph.Ref{{Field: "customer", ID: "customers/2"}},
	}
	_, _, err := st.Put(o, u64(1))
	require.ErrorIs(t, err, store.ErrVersionMismatch, "expected 1 of an absent object")

	version, rev, err := st.Put(o, u64(0))
	require.NoError(t, err)
	assert.Equal(t, uint64(2), version)
	assert.Equal(t, uint64(2), rev, "the order's change and its customer's")
	assert.Equal(t, []string{"2"}, queryStrings(t, url, "SELECT customer_id::text FROM orders WHERE id = 100"))

	found, _, err := st.Get([]string{"orders/100", "customers/2"})
	require.NoError(t, err)
	assert.Equal(t, uint64(2), found[0].Version)
	var p map[string]any
	require.NoError(t, json.Unmarshal(found[0].Payload, &p))
	assert.Equal(t, "new", p["status"])
	assert.Equal(t, "orders/100", refsOf(found[1], "orders")[0], "the customer's reverse refs see the new order first")

	_, _, err = st.Put(o, u64(1))
	require.ErrorIs(t, err, store.ErrVersionMismatch)
	assert.Contains(t, err.Error(), "at version 2, expected 1")
	o.Payload = []byte(`{"status":"paid","placed_at":"2026-02-01T00:00:00Z"}`)
	version, _, err = st.Put(o, u64(2))
	require.NoError(t, err)
	assert.Equal(t, uint64(3), version)
	version, _, err = st.Put(o, nil)
	require.NoError(t, err, "no expectation: last writer wins")
	assert.Equal(t, uint64(4), version)

	_, err = st.Delete("orders/100", u64(3))
	require.ErrorIs(t, err, store.ErrVersionMismatch)
	_, err = st.Delete("orders/100", u64(4))
	require.NoError(t, err)
	_, missing, err := st.Get([]string{"orders/100"})
	require.NoError(t, err)
	assert.Equal(t, []string{"orders/100"}, missing)
	_, err = st.Delete("orders/100", nil)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestPutRejections(t *testing.T) {
	st, _ := openShop(t)
	for _, tc := range []struct {
		name string
		o    *graph.Object
		want error
		msg  string
	}{
		{"read-only type", &graph.Object{ID: "products/1", Payload: []byte(`{"name":"x","price_cents":1}`)}, store.ErrReadOnly, `type "product" is not writable`},
		{"unknown id format", &graph.Object{ID: "widgets/1"}, store.ErrInvalid, "matches no type"},
		{"unknown payload column", &graph.Object{ID: "customers/9", Payload: []byte(`{"nick":"x"}`)}, store.ErrInvalid, `"nick" is not a payload column`},
		{"payload not an object", &graph.Object{ID: "customers/9", Payload: []byte(`[1]`)}, store.ErrInvalid, "want a JSON object"},
		{"unknown ref field", &graph.Object{ID: "orders/9", Refs: []graph.Ref{{Field: "boss", ID: "customers/1"}}}, store.ErrInvalid, `ref field "boss"`},
		{"ref of the wrong type", &graph.Object{ID: "orders/9", Refs: []graph.Ref{{Field: "customer", ID: "products/1"}}}, store.ErrInvalid, "not a customer id"},
		{"NOT NULL column left out", &graph.Object{ID: "customers/9", Payload: []byte(`{"name":"x"}`)}, store.ErrInvalid, "email"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := st.Put(tc.o, nil)
			require.ErrorIs(t, err, tc.want)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
	_, err := st.Delete("products/1", nil)
	require.ErrorIs(t, err, store.ErrReadOnly)
}
