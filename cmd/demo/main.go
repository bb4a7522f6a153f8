// Command demo shows lookahead at work: it starts the reference origin seeded
// with db4o task trees, then a sidecar with prefetching off and one with it
// on, walks the same graphs twice through each, object by object, and prints
// origin round trips, hits and misses per pass, read from the sidecar's own
// /metrics.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lookahead-dev/lookahead"
	"github.com/lookahead-dev/lookahead/internal/buildinfo"
	"github.com/lookahead-dev/lookahead/internal/launch"
	"github.com/lookahead-dev/lookahead/internal/scrape"
)

func main() {
	bin := flag.String("bin", "bin", "directory holding the origin and sidecar binaries")
	roots := flag.Int("walk-roots", 3, "task trees walked per pass")
	latency := flag.Duration("latency", time.Millisecond, "artificial origin latency per reply")
	version := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *version {
		fmt.Println("demo", buildinfo.Get())
		return
	}
	if err := run(*bin, *roots, *latency); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(bin string, roots int, latency time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	data, err := os.MkdirTemp("", "lookahead-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(data)

	fmt.Printf("starting origin: 20 db4o task trees of 781 tasks, %v latency per reply\n", latency)
	origin, err := launch.Start(ctx, filepath.Join(bin, "origin"), []string{
		"--listen", "127.0.0.1:0", "--metrics-listen", "", "--data", data,
		"--seed", "tasks", "--task-roots", "20", "--latency", latency.String(),
	}, nil)
	if err != nil {
		return err
	}
	defer origin.Stop(10 * time.Second)
	if err := origin.WaitServing(ctx); err != nil {
		return err
	}

	fmt.Printf("walking %d trees object by object (one Get per task), twice per sidecar\n\n", roots)
	fmt.Println("| sidecar prefetch | pass | objects | origin round trips | hits | misses | joined | walk time |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, mode := range []string{"off", "static", "adaptive"} {
		if err := demoSidecar(ctx, bin, origin.GRPC, mode, roots); err != nil {
			return err
		}
	}
	fmt.Println("\nstatic: --prefetch-depth 4; adaptive (the default): no settings, learns which refs the walk reads.")
	fmt.Println("With prefetching the first pass costs a few round trips per tree instead of one per object;")
	fmt.Println("the second pass is served from the cache with zero origin round trips either way.")
	return nil
}

func demoSidecar(ctx context.Context, bin, originAddr, mode string, roots int) error {
	args := []string{
		"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--origin", originAddr,
		"--prefetch-mode", mode, "--health-interval", "100ms",
	}
	if mode == "static" {
		args = append(args, "--prefetch-depth", "4") // one tree's depth below its root
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
		n := 0
		for r := 0; r < roots; r++ {
			k, err := walk(ctx, c, fmt.Sprintf("task-%d", r))
			if err != nil {
				return err
			}
			n += k
		}
		elapsed := time.Since(start)
		after, err := scrape.Fetch(ctx, sc.MetricsURL())
		if err != nil {
			return err
		}
		d := func(name string) float64 { return after.Sum(name) - before.Sum(name) }
		fmt.Printf("| %s | %d | %d | %.0f | %.0f | %.0f | %.0f | %v |\n", mode, pass, n,
			d("lookahead_origin_round_trips_total"), d("lookahead_cache_hits_total"),
			d("lookahead_cache_misses_total"), d("lookahead_inflight_joins_total"),
			elapsed.Round(time.Millisecond))
	}
	return nil
}

// walk activates a tree the way db4o does: one Get per object, breadth-first.
func walk(ctx context.Context, c *lookahead.Client, root string) (int, error) {
	queue := []string{root}
	n := 0
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		obj, _, err := c.Get(ctx, id, nil)
		if err != nil {
			return n, fmt.Errorf("get %s: %w", id, err)
		}
		n++
		for _, r := range obj.GetRefs() {
			queue = append(queue, r.GetId())
		}
	}
	return n, nil
}
