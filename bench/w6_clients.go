package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lookahead-dev/lookahead"
	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// The SQL the application's ORM, DataLoader and DBA would write.
const (
	w6OrdersSQL    = "SELECT id, customer_id, placed_at, status FROM orders WHERE id = ANY($1)"
	w6CustomerSQL  = "SELECT id, name, email, created_at FROM customers WHERE id = $1"
	w6ItemsSQL     = "SELECT id, product_id, quantity, price_cents FROM line_items WHERE order_id = $1 ORDER BY id"
	w6ProductSQL   = "SELECT id, name, price_cents FROM products WHERE id = $1"
	w6CustomersSQL = "SELECT id, name, email, created_at FROM customers WHERE id = ANY($1)"
	w6ItemsOfSQL   = "SELECT id, order_id, product_id, quantity, price_cents FROM line_items WHERE order_id = ANY($1) ORDER BY order_id, id"
	w6ProductsSQL  = "SELECT id, name, price_cents FROM products WHERE id = ANY($1)"
	w6JoinSQL      = `SELECT o.id, o.placed_at, o.status, c.id, c.name, c.email, c.created_at, li.id, li.quantity, li.price_cents, p.id, p.name, p.price_cents
	FROM orders o JOIN customers c ON c.id = o.customer_id JOIN line_items li ON li.order_id = o.id JOIN products p ON p.id = li.product_id
	WHERE o.id = ANY($1) ORDER BY o.id, li.id`
)

// queryIDs runs sql with args and returns the first column of each row as
// int64 and, if pick is not nil, the column pick too; counts the query.
func queryIDs(ctx context.Context, conn *pgx.Conn, s *w6Sample, pick int, sql string, args ...any) (first, picked []int64, err error) {
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	s.Calls++
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, nil, err
		}
		s.Objects++
		first = append(first, vals[0].(int64))
		if pick > 0 {
			picked = append(picked, vals[pick].(int64))
		}
	}
	return first, picked, rows.Err()
}

// nPlus1 is an ORM with lazy loading: the query for the orders, then per
// order its customer and its line items, per line item its product, each
// one query.
func (w *w6) nPlus1(ctx context.Context, ids []int64) (w6Sample, error) {
	var s w6Sample
	start := time.Now()
	orders, customers, err := queryIDs(ctx, w.conn, &s, 1, w6OrdersSQL, ids)
	if err != nil {
		return s, err
	}
	if len(orders) != len(ids) {
		return s, errW6Short
	}
	for i, o := range orders {
		if _, _, err := queryIDs(ctx, w.conn, &s, 0, w6CustomerSQL, customers[i]); err != nil {
			return s, err
		}
		_, products, err := queryIDs(ctx, w.conn, &s, 1, w6ItemsSQL, o)
		if err != nil {
			return s, err
		}
		for _, p := range products {
			if _, _, err := queryIDs(ctx, w.conn, &s, 0, w6ProductSQL, p); err != nil {
				return s, err
			}
		}
	}
	s.Time = time.Since(start)
	return s, nil
}

// dataLoader batches each level into one query: orders, then customers,
// then line items, then products.
func (w *w6) dataLoader(ctx context.Context, ids []int64) (w6Sample, error) {
	var s w6Sample
	start := time.Now()
	orders, customers, err := queryIDs(ctx, w.conn, &s, 1, w6OrdersSQL, ids)
	if err != nil {
		return s, err
	}
	if _, _, err := queryIDs(ctx, w.conn, &s, 0, w6CustomersSQL, dedupe(customers)); err != nil {
		return s, err
	}
	_, products, err := queryIDs(ctx, w.conn, &s, 2, w6ItemsOfSQL, orders)
	if err != nil {
		return s, err
	}
	if _, _, err := queryIDs(ctx, w.conn, &s, 0, w6ProductsSQL, dedupe(products)); err != nil {
		return s, err
	}
	s.Time = time.Since(start)
	return s, nil
}

// join is the query a DBA writes: one round trip for the whole page.
func (w *w6) join(ctx context.Context, ids []int64) (w6Sample, error) {
	var s w6Sample
	start := time.Now()
	if _, _, err := queryIDs(ctx, w.conn, &s, 0, w6JoinSQL, ids); err != nil {
		return s, err
	}
	s.Time = time.Since(start)
	return s, nil
}

func dedupe(ids []int64) []int64 {
	seen := map[int64]bool{}
	var out []int64
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// w6Hint prefetches a page's orders with their customers, line items and
// products.
var w6Hint = &lookahead.Prefetch{Depth: lookahead.Uint32(2), MaxObjects: lookahead.Uint32(100000), Fields: []string{"customer", "line_items", "product"}}

// lazyWalk is the same ORM over the sidecar: the page's orders in one
// BatchGet with a prefetch hint, then a Get per customer, line item and
// product, as lazy loading asks for them.
func (w *w6) lazyWalk(ctx context.Context, c *lookahead.Client, ids []int64) (w6Sample, error) {
	var s w6Sample
	start := time.Now()
	res, missing, err := c.BatchGet(ctx, orderIDs(ids), w6Hint)
	if err != nil {
		return s, err
	}
	if len(missing) > 0 {
		return s, fmt.Errorf("%w: %v missing", errW6Short, missing)
	}
	get := func(id string) (map[string][]string, error) {
		o, _, err := c.Get(ctx, id, nil)
		if err != nil {
			return nil, fmt.Errorf("get %s: %w", id, err)
		}
		s.Objects++
		return refsByField(o.GetRefs()), nil
	}
	for _, r := range res {
		s.Objects++
		refs := refsByField(r.Object.GetRefs())
		for _, id := range refs["customer"] {
			if _, err := get(id); err != nil {
				return s, err
			}
		}
		for _, id := range refs["line_items"] {
			item, err := get(id)
			if err != nil {
				return s, err
			}
			for _, p := range item["product"] {
				if _, err := get(p); err != nil {
					return s, err
				}
			}
		}
	}
	s.Time = time.Since(start)
	return s, nil
}

// getGraph asks the sidecar for the page's whole graph in one call.
func (w *w6) getGraph(ctx context.Context, c *lookahead.Client, ids []int64) (w6Sample, error) {
	var s w6Sample
	start := time.Now()
	g := lookahead.Graph{Roots: orderIDs(ids), Depth: w6Hint.Depth, MaxObjects: w6Hint.MaxObjects, Fields: w6Hint.Fields}
	_, err := c.GetGraph(ctx, g, func(lookahead.Result) error { s.Objects++; return nil })
	if err != nil {
		return s, err
	}
	s.Time = time.Since(start)
	return s, nil
}

func refsByField(refs []*lookaheadv1.Ref) map[string][]string {
	out := map[string][]string{}
	for _, r := range refs {
		out[r.GetField()] = append(out[r.GetField()], r.GetId())
	}
	return out
}
