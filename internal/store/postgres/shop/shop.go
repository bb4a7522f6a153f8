// Package shop is a sample schema for the PostgreSQL origin: customers,
// orders, line items and products, with its mapping and a generator.
package shop

import (
	"context"
	_ "embed"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
)

// Schema creates the shop's tables and indexes.
//
//go:embed schema.sql
var Schema string

// Mapping maps the shop's tables to object types.
//
//go:embed mapping.yaml
var Mapping []byte

// Size says how many rows to generate. Ids run from 1 to the count.
type Size struct {
	Customers, Products, Orders int
	// ItemsPerOrder is the largest number of line items of an order; each
	// has 1 to ItemsPerOrder, uniformly (zero = 5).
	ItemsPerOrder int
	// Seed seeds the generator; the same seed makes the same rows.
	Seed uint64
}

// Rows is the number of rows Load writes, about (line items vary).
func (s Size) Rows() int {
	return s.Customers + s.Products + s.Orders + s.Orders*(s.items()+1)/2
}

func (s Size) items() int {
	if s.ItemsPerOrder == 0 {
		return 5
	}
	return s.ItemsPerOrder
}

// Load creates the schema on conn and fills it with COPY; it returns the
// number of line items written.
func Load(ctx context.Context, conn *pgx.Conn, s Size) (lineItems int, err error) {
	if s.Customers < 1 || s.Products < 1 || s.Orders < 0 {
		return 0, fmt.Errorf("shop: size %+v: want at least one customer and one product", s)
	}
	if _, err := conn.Exec(ctx, Schema); err != nil {
		return 0, fmt.Errorf("shop: creating the schema: %w", err)
	}
	r := rand.New(rand.NewPCG(s.Seed, 42))
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var items [][]any
	for o := 1; o <= s.Orders; o++ {
		for range 1 + r.IntN(s.items()) {
			items = append(items, []any{int64(len(items) + 1), int64(o), int64(1 + r.IntN(s.Products)), int32(1 + r.IntN(4)), int32(100 + r.IntN(9900))})
		}
	}
	tables := []struct {
		name string
		cols []string
		n    int
		row  func(i int) ([]any, error)
	}{
		{"customers", []string{"id", "name", "email", "created_at"}, s.Customers, func(i int) ([]any, error) {
			id := int64(i + 1)
			return []any{id, fmt.Sprintf("Customer %d", id), fmt.Sprintf("c%d@example.com", id), epoch.Add(-time.Duration(id) * time.Hour)}, nil
		}},
		{"products", []string{"id", "name", "price_cents"}, s.Products, func(i int) ([]any, error) {
			return []any{int64(i + 1), fmt.Sprintf("Product %d", i+1), int32(100 + (i*37)%9900)}, nil
		}},
		{"orders", []string{"id", "customer_id", "placed_at", "status"}, s.Orders, func(i int) ([]any, error) {
			// Order i belongs to customer i mod n, so every customer has orders.
			return []any{int64(i + 1), int64(i%s.Customers + 1), epoch.Add(time.Duration(i) * time.Minute), "placed"}, nil
		}},
		{"line_items", []string{"id", "order_id", "product_id", "quantity", "price_cents"}, len(items), func(i int) ([]any, error) {
			return items[i], nil
		}},
	}
	for _, t := range tables {
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{t.name}, t.cols, pgx.CopyFromSlice(t.n, t.row)); err != nil {
			return 0, fmt.Errorf("shop: loading %s: %w", t.name, err)
		}
	}
	if _, err := conn.Exec(ctx, "ANALYZE"); err != nil {
		return 0, fmt.Errorf("shop: analyze: %w", err)
	}
	return len(items), nil
}
