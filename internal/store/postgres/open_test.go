package postgres_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/store"
	"github.com/lookahead-dev/lookahead/internal/store/postgres"
	"github.com/lookahead-dev/lookahead/internal/store/postgres/pgtest"
)

func TestOpenNamesWhatTheMappingGetsWrong(t *testing.T) {
	url, _ := newShop(t, true)
	bad := strings.NewReplacer("table: products", "table: prodcts", "[customer_id]", "[custmer_id]", "[name, price_cents]", "[name, price]").
		Replace(string(shopMapping(t)))
	m, err := postgres.ParseMapping([]byte(bad))
	require.NoError(t, err)
	_, err = postgres.Open(testCtx(t), postgres.Config{URL: url, Mapping: m})
	require.Error(t, err)
	for _, want := range []string{
		`type "product": table "prodcts" does not exist`,
		`type "order": table "orders" has no column "custmer_id" (ref customer)`,
		`type "customer": reverse ref "orders": table "orders" has no column "custmer_id"`,
	} {
		assert.Contains(t, err.Error(), want)
	}
}

func TestOpenWithoutTheChangeLogSaysToInstall(t *testing.T) {
	url, m := newShop(t, false)
	_, err := postgres.Open(testCtx(t), postgres.Config{URL: url, Mapping: m})
	require.ErrorContains(t, err, `no change log in schema "lookahead": run 'origin postgres-install'`)

	require.NoError(t, postgres.Install(testCtx(t), url, m))
	exec(t, url, "DROP TRIGGER lookahead_changes ON line_items")
	_, err = postgres.Open(testCtx(t), postgres.Config{URL: url, Mapping: m})
	require.ErrorContains(t, err, `table "line_items" has no lookahead_changes trigger`)
	require.NoError(t, postgres.Install(testCtx(t), url, m), "install runs again")
	st, err := postgres.Open(testCtx(t), postgres.Config{URL: url, Mapping: m})
	require.NoError(t, err)
	require.NoError(t, st.Close())
}

func TestIdentityNamesClusterDatabaseAndChangeLog(t *testing.T) {
	a, _ := openShop(t)
	b, _ := openShop(t)
	assert.Regexp(t, `^postgres:[0-9]+/t[0-9]+_\w+/lookahead$`, a.Identity())
	assert.NotEqual(t, a.Identity(), b.Identity(), "another database, another dataset")
	sysA, _, _ := strings.Cut(a.Identity(), "/")
	sysB, _, _ := strings.Cut(b.Identity(), "/")
	assert.Equal(t, sysA, sysB, "same cluster")
}

func TestDatabaseGoingAwayIsUnavailableUntilItIsBack(t *testing.T) {
	st, url := openShop(t)
	ctx := testCtx(t)
	require.NoError(t, pgtest.Shared.StopServer(ctx))
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = pgtest.Shared.StartServer(ctx)
		}
	})
	_, _, err := st.Get([]string{"orders/1"})
	require.ErrorIs(t, err, store.ErrUnavailable)
	_, err = st.Changes(0, 0)
	require.ErrorIs(t, err, store.ErrUnavailable)

	require.NoError(t, pgtest.Shared.StartServer(ctx))
	restarted = true
	found, _, err := st.Get([]string{"orders/1"})
	require.NoError(t, err, "the pool reconnects")
	require.Len(t, found, 1)
	// The listener reconnects too: a change made now still wakes watchers.
	require.Eventually(t, func() bool {
		exec(t, url, "UPDATE products SET price_cents = price_cents + 1 WHERE id = 1")
		ch := st.Changed()
		select {
		case <-ch:
			return true
		case <-time.After(500 * time.Millisecond):
			return false
		}
	}, 30*time.Second, 10*time.Millisecond)
}
