package bench

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/lookahead-dev/lookahead/bench/plot"
)

func (l w6Latency) med(row string, f func(w6Sample) float64) float64 {
	var xs []float64
	for _, s := range l.Samples[row] {
		xs = append(xs, f(s))
	}
	if len(xs) == 0 {
		return math.NaN()
	}
	return median(xs)
}

func (l w6Latency) time(row string) float64 {
	return l.med(row, func(s w6Sample) float64 { return s.Time.Seconds() })
}

func (l w6Latency) table() string {
	lower := l.time(w6Join)
	var rows [][]string
	for _, name := range w6Rows {
		if len(l.Samples[name]) == 0 {
			continue
		}
		t := l.time(name)
		rows = append(rows, []string{name, fmtDur(time.Duration(t * float64(time.Second))),
			fmtCount(l.med(name, func(s w6Sample) float64 { return s.Calls })),
			fmtCount(l.med(name, func(s w6Sample) float64 { return float64(s.Objects) })),
			fmtRatio(t / lower)})
	}
	return table([]string{"row", "time per page", "SQL queries or origin round trips per page", "rows or objects received", "× lower bound"}, rows)
}

func (r *reporter) w6(res *w6Result) {
	c := res.Cfg
	var b strings.Builder
	b.WriteString("## W6 — an ORM's N+1 over a PostgreSQL shop\n\n")
	if res.NA != "" {
		fmt.Fprintf(&b, "Not run: %s.\n", res.NA)
		r.emit(b.String())
		return
	}
	fmt.Fprintf(&b, "The sample shop (internal/store/postgres/shop: customers → orders → line items → products) with %d customers, %d products, "+
		"%d orders and their line items, %d rows in all, in a throwaway PostgreSQL 15 (loaded with COPY and the change log installed in %s). "+
		"A page is %d orders; the application reads each order's customer, its line items and each item's product. "+
		"%d pages per repetition, %d repetitions; figures are medians per page, rows interleaved (the order rotates every repetition).\n\n",
		c.Shop.Customers, c.Shop.Products, c.Shop.Orders, res.Rows, fmtDur(res.Load), c.PageOrders, c.Pages, c.Reps)
	b.WriteString(`How each row runs (bench/w6.go, bench/w6_clients.go):

- **SQL: N+1 (lazy ORM)**: one query for the page's orders, then per order one query for its customer and one for its line items, per line item one for its product: what lazy loading sends.
- **SQL: DataLoader (batched per level)**: one query per level, ` + "`= ANY($1)`" + ` of the ids the level before found: orders, customers, line items, products (4 queries).
- **SQL: one JOIN (lower bound)**: the query a DBA writes, orders ⋈ customers ⋈ line items ⋈ products for the page's ids, one round trip. Ratios are to this row.
- **lookahead cold**: ` + "`origin --store postgres://… --mapping shop.yaml`" + ` next to the database, a fresh sidecar (` + "`--prefetch-depth 2 --prefetch-fields customer,line_items,product`" + `) next to the application; the same lazy ORM walk, object by object: one BatchGet of the page's orders with that prefetch hint, then one Get per customer, line item and product.
- **lookahead warm**: the same pages again on the same sidecar.
- **extra: lookahead GetGraph cold / warm**: one GetGraph of the page's orders (depth 2, the same fields) instead of the object-by-object walk: what an application that asks for the graph up front pays.

The latency is on the application's network hop: between the SQL client and PostgreSQL for the SQL rows, between the sidecar and the origin for the lookahead rows (the sidecar sits next to the application, on loopback; the origin next to the database, unproxied). SQL rows count their queries (statements are prepared before timing); lookahead rows count the sidecar's origin round trips (lookahead_origin_round_trips_total). The object-by-object walk also pays one loopback gRPC call per object to the sidecar, which no latency setting removes.
`)
	for _, l := range res.Latencies {
		fmt.Fprintf(&b, "\n### Latency %d ms one way — measured round trip %s (SQL), %s (gRPC)\n\n", l.LatencyMS, fmtMS(l.SQLRTT), fmtMS(l.GRPCRTT))
		b.WriteString(r.addTable(l.table()))
	}
	if len(res.Latencies) > 0 {
		l := res.Latencies[0]
		var bars []plot.Bar
		for _, name := range w6Rows {
			if len(l.Samples[name]) > 0 {
				bars = append(bars, plot.Bar{Label: name, Parts: []float64{l.time(name)}})
			}
		}
		b.WriteString("\n" + r.plot("w6_time.svg", "W6 time per page", plot.BarChart{
			Title:  fmt.Sprintf("W6: time per page of %d orders, %d ms one way — log scale", c.PageOrders, l.LatencyMS),
			XLabel: "seconds per page", Parts: []string{"page"}, Bars: bars, Log: true,
		}.SVG()))
	}
	if len(res.Latencies) > 1 {
		var series []plot.Series
		for _, name := range w6Rows {
			if name == w6Join {
				continue
			}
			s := plot.Series{Name: name}
			for _, l := range res.Latencies {
				s.X = append(s.X, float64(l.LatencyMS))
				s.Y = append(s.Y, l.time(name)/l.time(w6Join))
			}
			series = append(series, s)
		}
		b.WriteString("\n" + r.plot("w6_ratio.svg", "W6 time over the JOIN vs latency", plot.LineChart{
			Title: "W6: time per page over the one-JOIN lower bound", XLabel: "one-way latency of the application's hop (ms)",
			YLabel: "× lower bound", Series: series, RefY: 1, RefLabel: "one JOIN",
		}.SVG()))
	}
	r.addRaw("w6", res)
	r.emit(b.String())
}
