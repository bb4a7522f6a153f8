// Command lookahead-bench runs the benchmark workloads W1–W7 against the
// origin and sidecar binaries, prints markdown tables and writes a markdown
// report and plots. BENCHMARKS.md is assembled from such reports by hand
// (each section says its command), so the report goes to results/ by
// default rather than over it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/lookahead-dev/lookahead/bench"
	"github.com/lookahead-dev/lookahead/bench/floor"
	"github.com/lookahead-dev/lookahead/internal/buildinfo"
)

func main() {
	// The W3 floor server is this same binary, re-run with this argument.
	if len(os.Args) > 1 && os.Args[1] == floor.Command {
		os.Exit(floor.Main(os.Args[2:]))
	}
	mode := flag.String("mode", "quick", "sizes: full (BENCH.md's, about 25 minutes on 2 cores), quick (under 3 minutes) or smoke (seconds)")
	bin := flag.String("bin", "bin", "directory holding the origin and sidecar binaries (make build)")
	out := flag.String("out", "results", "directory for plots and raw results; empty disables")
	md := flag.String("markdown", "results/report.md", "report to write; empty disables")
	workloads := flag.String("workloads", "", "comma-separated subset of w1,w2,w3,w4,w5,w6,w7; empty runs all")
	grid := flag.String("w5-grid", "", `W5's static settings searched for the best static row, "DEPTH/MAX_OBJECTS,..." (e.g. 1/100,2/200); empty = the mode's grid`)
	w7Grid := flag.String("w7-grid", "", `W7's static settings searched for the best static row, as -w5-grid; empty = the mode's grid`)
	w7Patterns := flag.String("w7-patterns", "", `W7's patterns to run, comma-separated names as in the report (e.g. "chain,diamonds"); empty runs all`)
	w5Patterns := flag.String("w5-patterns", "", `W5's patterns to run, comma-separated names as in the report (e.g. "feed,hot spot"); empty runs all`)
	w5Lat := flag.String("w5-latencies", "", "W5's one-way latencies in ms, comma-separated (e.g. 1); empty = the mode's")
	w1Rows := flag.String("w1-rows", "", `W1's rows to run, comma-separated names as in the report (e.g. "full_prefetch,full_prefetch + near cache"); empty runs all`)
	w1Lat := flag.String("w1-latencies", "", "W1's one-way latencies in ms, comma-separated (e.g. 1); empty = the mode's")
	w3Mode := flag.String("w3-prefetch-mode", "", "the sidecar's --prefetch-mode in W3 (off, static, adaptive); empty = off")
	requireRedis := flag.Bool("require-redis", false, "fail when redis-server is not installed instead of skipping the redis rows")
	version := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *version {
		fmt.Println("lookahead-bench", buildinfo.Get())
		return
	}
	cfg, err := bench.Preset(*mode)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lookahead-bench:", err)
		os.Exit(2)
	}
	cfg.Bin, cfg.Out, cfg.Markdown, cfg.RequireRedis = *bin, *out, *md, *requireRedis
	cfg.Command = strings.Join(os.Args, " ")
	cfg.Stdout = os.Stdout
	if *grid != "" {
		if cfg.W5.Statics, err = bench.ParseW5Grid(*grid); err != nil {
			fmt.Fprintln(os.Stderr, "lookahead-bench: -w5-grid:", err)
			os.Exit(2)
		}
	}
	if *w7Grid != "" {
		if cfg.W7.Statics, err = bench.ParseW5Grid(*w7Grid); err != nil {
			fmt.Fprintln(os.Stderr, "lookahead-bench: -w7-grid:", err)
			os.Exit(2)
		}
	}
	if *w5Patterns != "" {
		cfg.W5.Patterns = strings.Split(*w5Patterns, ",")
	}
	if *w5Lat != "" {
		if cfg.W5.LatenciesMS, err = parseInts(*w5Lat); err != nil {
			fmt.Fprintln(os.Stderr, "lookahead-bench: -w5-latencies:", err)
			os.Exit(2)
		}
	}
	if *w7Patterns != "" {
		cfg.W7.Patterns = strings.Split(*w7Patterns, ",")
	}
	if *w1Rows != "" {
		cfg.W1.Rows = strings.Split(*w1Rows, ",")
	}
	if *w1Lat != "" {
		if cfg.W1.LatenciesMS, err = parseInts(*w1Lat); err != nil {
			fmt.Fprintln(os.Stderr, "lookahead-bench: -w1-latencies:", err)
			os.Exit(2)
		}
	}
	cfg.W3.PrefetchMode = *w3Mode
	if *workloads != "" {
		cfg.Workloads = strings.Split(*workloads, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := bench.Run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "lookahead-bench:", err)
		os.Exit(1)
	}
}

// parseInts parses a comma-separated list of non-negative integers.
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q: want a non-negative integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}
