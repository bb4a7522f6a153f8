package postgres_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lookahead-dev/lookahead/internal/store/postgres"
	"github.com/lookahead-dev/lookahead/internal/store/postgres/pgtest"
	"github.com/lookahead-dev/lookahead/internal/store/postgres/shop"
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m, func() error { return goleak.Find() }))
}

// small is the shop every test starts from: 3 customers, 4 products, 6
// orders (order i belongs to customer (i-1) mod 3 + 1) with 1–3 items each.
var small = shop.Size{Customers: 3, Products: 4, Orders: 6, ItemsPerOrder: 3, Seed: 7}

// newShop creates a database with the small shop and returns its URL and
// the shop's mapping; install installs the change log.
func newShop(t testing.TB, install bool) (string, *postgres.Mapping) {
	t.Helper()
	return newShopSized(t, install, small)
}

func newShopSized(t testing.TB, install bool, size shop.Size) (string, *postgres.Mapping) {
	t.Helper()
	m, err := postgres.ParseMapping(shop.Mapping)
	require.NoError(t, err)
	return pgtest.NewDBFrom(t, shopTemplate(t, install, size, m)), m
}

// templates holds the names of the shop databases loaded so far, by size
// and install: each is loaded once and copied for every test.
var (
	templatesMu sync.Mutex
	templates   = map[string]string{}
)

func shopTemplate(t testing.TB, install bool, size shop.Size, m *postgres.Mapping) string {
	t.Helper()
	if pgtest.Shared == nil {
		t.Skip("no PostgreSQL server binaries")
	}
	templatesMu.Lock()
	defer templatesMu.Unlock()
	name := fmt.Sprintf("shop_%t_%d_%d_%d_%d_%d", install, size.Customers, size.Products, size.Orders, size.ItemsPerOrder, size.Seed)
	if _, ok := templates[name]; ok {
		return name
	}
	ctx := testCtx(t)
	url, err := pgtest.Shared.CreateDB(ctx, name)
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	_, err = shop.Load(ctx, conn, size)
	require.NoError(t, conn.Close(ctx))
	require.NoError(t, err)
	if install {
		require.NoError(t, postgres.Install(ctx, url, m))
	}
	templates[name] = name
	return name
}

// openShop is newShop, installed, with a store open on it.
func openShop(t *testing.T) (*postgres.Store, string) { return openShopSized(t, small) }

func openShopSized(t testing.TB, size shop.Size) (*postgres.Store, string) {
	t.Helper()
	url, m := newShopSized(t, true, size)
	st, err := postgres.Open(testCtx(t), postgres.Config{URL: url, Mapping: m, ReconnectBackoff: 200 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	return st, url
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// exec runs SQL on its own connection, as another application would.
func exec(t *testing.T, url, sql string, args ...any) {
	t.Helper()
	ctx := testCtx(t)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql, args...)
	require.NoError(t, err)
}

// connect opens a connection closed when t ends.
func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(testCtx(t), url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}
