// Command soak starts a real origin and sidecar and drives them with many
// concurrent clients for a while, mixing Gets, GetGraphs and writes, then
// reports requests and errors by code, latencies, and the sidecar's
// goroutines and resident memory at the start and the end: a leak or a
// slow failure shows as growth or as errors.
//
// Usage:
//
//	go build -o bin/ ./cmd/origin ./cmd/sidecar
//	go run ./cmd/soak --bin bin --clients 64 --duration 60s
//
// Extra flags reach the processes through --sidecar-arg and --origin-arg,
// e.g. --origin-arg=--latency=2ms --sidecar-arg=--prefetch-depth=2. The exit
// code is 1 when a request failed unexpectedly or the goroutines grew by
// more than --max-goroutine-growth.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/lookahead-dev/lookahead/internal/buildinfo"
)

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

func parseFlags(args []string) (Config, int, bool, error) {
	var cfg Config
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.StringVar(&cfg.Bin, "bin", "bin", "directory holding the origin and sidecar binaries")
	fs.IntVar(&cfg.Clients, "clients", DefaultClients, "concurrent clients")
	fs.DurationVar(&cfg.Duration, "duration", DefaultDuration, "how long the load runs")
	fs.IntVar(&cfg.Conns, "conns", DefaultConns, "gRPC connections the clients share")
	fs.IntVar(&cfg.Roots, "roots", DefaultRoots, "task trees seeded at the origin (781 objects each)")
	fs.IntVar(&cfg.Mix.Get, "get", DefaultMix.Get, "weight of Get in the mix")
	fs.IntVar(&cfg.Mix.Graph, "graph", DefaultMix.Graph, "weight of GetGraph in the mix")
	fs.IntVar(&cfg.Mix.Put, "put", DefaultMix.Put, "weight of Put (through the sidecar) in the mix")
	fs.IntVar(&cfg.GraphDepth, "graph-depth", DefaultGraphDepth, "depth of each GetGraph")
	fs.DurationVar(&cfg.Timeout, "timeout", DefaultTimeout, "deadline of each request")
	fs.Var((*multiFlag)(&cfg.SidecarArgs), "sidecar-arg", "extra sidecar flag, repeatable")
	fs.Var((*multiFlag)(&cfg.OriginArgs), "origin-arg", "extra origin flag, repeatable")
	growth := fs.Int("max-goroutine-growth", 50, "fail when the sidecar ends with more goroutines than it started with plus this")
	verbose := fs.Bool("v", false, "copy the processes' logs to stderr")
	version := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return cfg, 0, false, err
	}
	if *version {
		return cfg, 0, false, errVersion
	}
	if fs.NArg() > 0 {
		return cfg, 0, false, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	return cfg, *growth, *verbose, nil
}

// errVersion is parseFlags' answer to --version: print it and stop.
var errVersion = errors.New("--version")

func main() {
	cfg, growth, verbose, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if errors.Is(err, errVersion) {
		fmt.Println("soak", buildinfo.Get())
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	if verbose {
		cfg.Log = os.Stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	rep.Print(os.Stdout)
	if problems := rep.Problems(growth); len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "soak:", p)
		}
		os.Exit(1)
	}
}
