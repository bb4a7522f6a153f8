// Command demo-postgres shows lookahead over an existing PostgreSQL schema:
// it starts a throwaway PostgreSQL, loads the sample shop, installs the
// change log with `origin postgres-install`, starts the origin on it and a
// sidecar with prefetching off and on, walks orders the way an ORM with lazy
// loading does (order → customer → line items → products, one Get each)
// and prints the round trips, read from the sidecar's /metrics.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lookahead-dev/lookahead"
	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/launch"
	"github.com/lookahead-dev/lookahead/internal/scrape"
	"github.com/lookahead-dev/lookahead/internal/store/postgres/pgtest"
	"github.com/lookahead-dev/lookahead/internal/store/postgres/shop"
)

func main() {
	bin := flag.String("bin", "bin", "directory holding the origin and sidecar binaries")
	orders := flag.Int("walk-orders", 20, "orders walked per pass")
	flag.Parse()
	if err := run(*bin, *orders); err != nil {
		fmt.Fprintln(os.Stderr, "demo-postgres:", err)
		os.Exit(1)
	}
}

var size = shop.Size{Customers: 5000, Products: 1000, Orders: 20000, ItemsPerOrder: 5, Seed: 1}

func run(bin string, orders int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fmt.Println("starting a throwaway PostgreSQL (initdb into a temp dir)")
	pg, err := pgtest.Start(ctx)
	if err != nil {
		return err
	}
	defer pg.Stop()
	url, err := pg.CreateDB(ctx, "shop")
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	items, err := shop.Load(ctx, conn, size)
	conn.Close(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("loaded the shop: %d customers, %d products, %d orders, %d line items\n", size.Customers, size.Products, size.Orders, items)

	dir, err := os.MkdirTemp("", "lookahead-demo-postgres-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	mapping := filepath.Join(dir, "mapping.yaml")
	if err := os.WriteFile(mapping, shop.Mapping, 0o644); err != nil {
		return err
	}
	install := exec.CommandContext(ctx, filepath.Join(bin, "origin"), "postgres-install", "--store", url, "--mapping", mapping)
	out, err := install.CombinedOutput()
	if err != nil {
		return fmt.Errorf("origin postgres-install: %w: %s", err, out)
	}
	fmt.Print("origin postgres-install: ", string(out))
	origin, err := launch.Start(ctx, filepath.Join(bin, "origin"), []string{
		"--listen", "127.0.0.1:0", "--metrics-listen", "", "--store", url, "--mapping", mapping, "--latency", "1ms",
	}, nil)
	if err != nil {
		return err
	}
	defer origin.Stop(10 * time.Second)
	if err := origin.WaitServing(ctx); err != nil {
		return fmt.Errorf("%w\n%s", err, origin.Log())
	}

	fmt.Printf("\norigin: 1 ms latency per reply. Walking %d orders as a lazy-loading ORM does: one BatchGet of the orders,\n"+
		"then one Get per customer, line item and product; twice per sidecar\n\n", orders)
	fmt.Println("| sidecar prefetch | pass | objects | origin round trips | hits | misses | walk time |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, mode := range []string{"off", "static"} {
		if err := demoSidecar(ctx, bin, origin.GRPC, mode, orders); err != nil {
			return err
		}
	}
	fmt.Println("\nstatic: --prefetch-depth 2 --prefetch-fields customer,line_items,product, and the page's BatchGet carries")
	fmt.Println("the same as a hint; the origin answers each level of an expansion with one SQL query per type.")
	fmt.Println("Without the sidecar, the same walk as SQL is one query per object (W6 in BENCHMARKS.md).")
	return nil
}

func demoSidecar(ctx context.Context, bin, originAddr, mode string, orders int) error {
	args := []string{
		"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--origin", originAddr,
		"--prefetch-mode", mode, "--health-interval", "100ms",
	}
	if mode == "static" {
		args = append(args, "--prefetch-depth", "2", "--prefetch-fields", "customer,line_items,product")
	}
	sc, err := launch.Start(ctx, filepath.Join(bin, "sidecar"), args, nil)
	if err != nil {
		return err
	}
	defer sc.Stop(10 * time.Second)
	if err := sc.WaitServing(ctx); err != nil {
		return err
	}
	c, err := lookahead.Dial(sc.GRPC)
	if err != nil {
		return err
	}
	defer c.Close()
	for pass := 1; pass <= 2; pass++ {
		before, err := scrape.Fetch(ctx, sc.MetricsURL())
		if err != nil {
			return err
		}
		start := time.Now()
		n, err := walkOrders(ctx, c, orders, mode == "static")
		if err != nil {
			return err
		}
		elapsed := time.Since(start)
		after, err := scrape.Fetch(ctx, sc.MetricsURL())
		if err != nil {
			return err
		}
		d := func(name string) float64 { return after.Sum(name) - before.Sum(name) }
		fmt.Printf("| %s | %d | %d | %.0f | %.0f | %.0f | %v |\n", mode, pass, n,
			d("lookahead_origin_round_trips_total"), d("lookahead_cache_hits_total"),
			d("lookahead_cache_misses_total"), elapsed.Round(time.Millisecond))
	}
	return nil
}

// walkOrders loads a page of orders in one BatchGet (with a prefetch hint
// for their graph when hint is set), then each order's customer, line items
// and their products one Get at a time, as lazy loading does.
func walkOrders(ctx context.Context, c *lookahead.Client, orders int, hint bool) (int, error) {
	ids := make([]string, orders)
	for i := range ids {
		ids[i] = fmt.Sprintf("orders/%d", i+1)
	}
	var h *lookahead.Prefetch
	if hint {
		h = &lookahead.Prefetch{Depth: lookahead.Uint32(2), Fields: []string{"customer", "line_items", "product"}}
	}
	page, missing, err := c.BatchGet(ctx, ids, h)
	if err != nil {
		return 0, err
	}
	if len(missing) > 0 {
		return 0, fmt.Errorf("orders missing: %v", missing)
	}
	n := len(page)
	get := func(id string) (map[string][]string, error) {
		obj, _, err := c.Get(ctx, id, nil)
		if err != nil {
			return nil, fmt.Errorf("get %s: %w", id, err)
		}
		n++
		return refsOf(obj), nil
	}
	for _, o := range page {
		refs := refsOf(o.Object)
		for _, cid := range refs["customer"] {
			if _, err := get(cid); err != nil {
				return n, err
			}
		}
		for _, li := range refs["line_items"] {
			item, err := get(li)
			if err != nil {
				return n, err
			}
			for _, p := range item["product"] {
				if _, err := get(p); err != nil {
					return n, err
				}
			}
		}
	}
	return n, nil
}

func refsOf(o *lookaheadv1.Object) map[string][]string {
	refs := map[string][]string{}
	for _, r := range o.GetRefs() {
		refs[r.GetField()] = append(refs[r.GetField()], r.GetId())
	}
	return refs
}
