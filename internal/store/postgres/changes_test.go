package postgres_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/store"
	"github.com/lookahead-dev/lookahead/internal/store/postgres"
)

// awaitRevision waits until the store's revision reaches rev, through its
// Changed channel (that is, the database's notification).
func awaitRevision(t *testing.T, st *postgres.Store, rev uint64) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		ch := st.Changed()
		if st.Revision() >= rev {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("revision %d never reached; at %d", rev, st.Revision())
		}
	}
}

func TestChangesFromOtherWriters(t *testing.T) {
	st, url := openShop(t)
	require.Equal(t, uint64(0), st.Revision(), "nothing changed since install")

	exec(t, url, "UPDATE customers SET name = 'Renamed' WHERE id = 2")
	awaitRevision(t, st, 1)
	cs, err := st.Changes(0, 0)
	require.NoError(t, err)
	require.Equal(t, []store.Change{{Revision: 1, ID: "customers/2", Version: 2}}, cs)
	found, _, err := st.Get([]string{"customers/2"})
	require.NoError(t, err)
	assert.Equal(t, uint64(2), found[0].Version, "the object's version is the change's")

	// A new line item changes its own object and its order's refs.
	exec(t, url, "INSERT INTO line_items (id, order_id, product_id, quantity, price_cents) VALUES (1000, 3, 1, 1, 100)")
	awaitRevision(t, st, 3)
	cs, err = st.Changes(1, 0)
	require.NoError(t, err)
	assert.Equal(t, []store.Change{
		{Revision: 2, ID: "line_items/1000", Version: 2},
		{Revision: 3, ID: "orders/3", Version: 2},
	}, cs)

	// Moving the item to another order changes both orders; deleting it
	// records a deletion that supersedes its versions.
	exec(t, url, "UPDATE line_items SET order_id = 5 WHERE id = 1000")
	exec(t, url, "DELETE FROM line_items WHERE id = 1000")
	awaitRevision(t, st, 8)
	cs, err = st.Changes(3, 2)
	require.NoError(t, err)
	assert.Equal(t, []store.Change{
		{Revision: 4, ID: "line_items/1000", Version: 3},
		{Revision: 5, ID: "orders/3", Version: 3},
	}, cs, "limit 2")
	cs, err = st.Changes(5, 0)
	require.NoError(t, err)
	assert.Equal(t, []store.Change{
		{Revision: 6, ID: "orders/5", Version: 2},
		{Revision: 7, ID: "line_items/1000", Version: 4, Deleted: true},
		{Revision: 8, ID: "orders/5", Version: 3},
	}, cs)
}

func TestRevisionSurvivesReopen(t *testing.T) {
	url, m := newShop(t, true)
	exec(t, url, "UPDATE products SET price_cents = 1 WHERE id IN (1, 2)")
	st, err := postgres.Open(testCtx(t), postgres.Config{URL: url, Mapping: m})
	require.NoError(t, err)
	assert.Equal(t, uint64(2), st.Revision())
	require.NoError(t, st.Close())
	require.NoError(t, st.Close(), "idempotent")
	_, _, err = st.Get([]string{"products/1"})
	require.ErrorIs(t, err, store.ErrClosed)
	select {
	case <-st.Changed():
	default:
		t.Fatal("Close did not wake Changed waiters")
	}
}

func TestResumeBeforeCompactionFails(t *testing.T) {
	st, url := openShop(t)
	exec(t, url, "UPDATE products SET price_cents = 1")
	awaitRevision(t, st, 4)
	mark, err := st.Compact(2)
	require.NoError(t, err)
	require.Equal(t, uint64(2), mark)

	_, err = st.Changes(1, 0)
	require.ErrorIs(t, err, store.ErrCompacted)
	assert.Contains(t, err.Error(), "keeps revisions after 2")
	cs, err := st.Changes(2, 0)
	require.NoError(t, err, "resuming at the mark loses nothing")
	require.Len(t, cs, 2)
	assert.Equal(t, uint64(3), cs[0].Revision)
}
