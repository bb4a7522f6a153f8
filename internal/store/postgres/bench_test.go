package postgres_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/store/postgres/shop"
)

// BenchmarkExpandPage walks a page of 20 orders to their customers, line
// items and products as the origin's Expand does: one Get per level.
func BenchmarkExpandPage(b *testing.B) {
	st, _ := openShopSized(b, shop.Size{Customers: 100, Products: 50, Orders: 400, ItemsPerOrder: 5, Seed: 1})
	roots := make([]string, 20)
	for i := range roots {
		roots[i] = fmt.Sprintf("orders/%d", i+1)
	}
	budget := graph.Budget{Depth: 2, Fields: []string{"customer", "line_items", "product"}}
	objects := 0
	b.ResetTimer()
	for range b.N {
		t := graph.NewTraversal(roots, budget)
		for !t.Done() {
			found, _, err := st.Get(t.Pending())
			require.NoError(b, err)
			objects += len(t.Resolve(found))
		}
	}
	b.ReportMetric(float64(objects)/float64(b.N), "objects/op")
}
