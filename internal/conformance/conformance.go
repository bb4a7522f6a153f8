// Package conformance checks an origin over gRPC against lookahead's origin
// contract (docs/origin.md) and reports each check as passed, failed or
// skipped, with its reason.
package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// Config says what to check. Zero values take the documented defaults.
type Config struct {
	// Writes enables the checks that write (Put, Delete, expected versions,
	// versions, Watch resume, and Expand over a graph they write). They
	// write only ids that start with Prefix and delete them afterwards.
	Writes bool
	// Prefix starts every id the write checks create; a random suffix is
	// added per run so that runs never collide. Default "conformance/".
	Prefix string
	// Timeout bounds each call; default 10s.
	Timeout time.Duration
	// WatchWait is how long a Watch check waits for changes it expects;
	// default 5s.
	WatchWait time.Duration
}

func (c *Config) setDefaults() {
	if c.Prefix == "" {
		c.Prefix = "conformance/"
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Second
	}
	if c.WatchWait == 0 {
		c.WatchWait = 5 * time.Second
	}
}

func (c Config) validate() error {
	var errs []error
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("conformance: timeout %v: must be positive", c.Timeout))
	}
	if c.WatchWait < 0 {
		errs = append(errs, fmt.Errorf("conformance: watch wait %v: must be positive", c.WatchWait))
	}
	return errors.Join(errs...)
}

// Outcome is a check's verdict.
type Outcome string

// Outcomes.
const (
	Pass Outcome = "PASS"
	Fail Outcome = "FAIL"
	Skip Outcome = "SKIP" // the origin does not implement what it checks, or writes are off
)

// Result is one check's verdict and why.
type Result struct {
	Name    string
	Outcome Outcome
	Reason  string
}

// Failed reports whether any check failed.
func Failed(rs []Result) bool {
	for _, r := range rs {
		if r.Outcome == Fail {
			return true
		}
	}
	return false
}

// Print writes rs as a table: check, outcome, reason.
func Print(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tRESULT\tREASON")
	counts := map[Outcome]int{}
	for _, r := range rs {
		counts[r.Outcome]++
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, r.Outcome, strings.ReplaceAll(r.Reason, "\n", " "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d passed, %d failed, %d skipped\n", counts[Pass], counts[Fail], counts[Skip])
	return err
}

// checker runs the checks against one origin.
type checker struct {
	cfg    Config
	rpc    lookaheadv1.OriginServiceClient
	health healthpb.HealthClient
	desc   *lookaheadv1.DescribeResponse // nil when Describe is not implemented
	prefix string                        // this run's id prefix

	// Filled by the write checks, read by those after them.
	readOnly bool                           // Put answered UNIMPLEMENTED
	noWatch  bool                           // Watch answered UNIMPLEMENTED
	graph    map[string]*lookaheadv1.Object // written, by short name, with their current versions
	writes   []write                        // every write made, in order
}

// write is one write the checks made and what the origin answered.
type write struct {
	id       string
	version  uint64 // after the write
	revision uint64
	deleted  bool
}

// skipError marks a check that does not apply.
type skipError struct{ reason string }

func (s skipError) Error() string { return s.reason }

func skip(format string, args ...any) error { return skipError{fmt.Sprintf(format, args...)} }

// check is one named check; its error is its failure (or a skipError).
type check struct {
	name string
	run  func(c *checker, ctx context.Context) error
	// writes marks checks that write.
	writes bool
}

// Run checks the origin behind cc and returns one Result per check, in a
// fixed order. It fails only when cfg is invalid.
func Run(ctx context.Context, cc grpc.ClientConnInterface, cfg Config) ([]Result, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	c := &checker{
		cfg: cfg, rpc: lookaheadv1.NewOriginServiceClient(cc), health: healthpb.NewHealthClient(cc),
		prefix: cfg.Prefix + hex.EncodeToString(suffix[:]) + "/",
	}
	var out []Result
	for _, ch := range checks() {
		if ch.writes && !cfg.Writes {
			out = append(out, Result{ch.name, Skip, "writes are off (--writes)"})
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, cfg.Timeout+cfg.WatchWait)
		err := ch.run(c, cctx)
		cancel()
		var s skipError
		switch {
		case err == nil:
			out = append(out, Result{ch.name, Pass, ""})
		case errors.As(err, &s):
			out = append(out, Result{ch.name, Skip, s.reason})
		default:
			out = append(out, Result{ch.name, Fail, err.Error()})
		}
	}
	if cfg.Writes {
		if err := c.cleanup(ctx); err != nil {
			out = append(out, Result{"cleanup", Fail, err.Error()})
		}
	}
	return out, nil
}

// checks lists every check in the order they run. The read-only ones come
// first; the write checks build on the graph "writes/graph" writes.
func checks() []check {
	return []check{
		{name: "describe/identity-stable", run: (*checker).describeStable},
		{name: "health/serving-or-absent", run: (*checker).healthServing},
		{name: "batchget/empty", run: (*checker).batchGetEmpty},
		{name: "batchget/missing", run: (*checker).batchGetMissing},
		{name: "batchget/bad-input", run: (*checker).batchGetBadInput},
		{name: "batchget/speculative-or-shed", run: (*checker).batchGetSpeculative},
		{name: "expand/bad-input", run: (*checker).expandBadInput},
		{name: "expand/missing-root", run: (*checker).expandMissingRoot},
		{name: "watch/announces-revision", run: (*checker).watchHeader},
		{name: "writes/bad-input", run: (*checker).writeBadInput, writes: true},
		{name: "writes/graph", run: (*checker).writeGraph, writes: true},
		{name: "writes/versions-grow", run: (*checker).versionsGrow, writes: true},
		{name: "writes/expected-version", run: (*checker).expectedVersion, writes: true},
		{name: "batchget/duplicates-and-order", run: (*checker).batchGetDuplicates, writes: true},
		{name: "expand/depth-and-levels", run: (*checker).expandDepth, writes: true},
		{name: "expand/cycles", run: (*checker).expandCycles, writes: true},
		{name: "expand/max-objects", run: (*checker).expandBudget, writes: true},
		{name: "expand/fields", run: (*checker).expandFields, writes: true},
		{name: "expand/known-ids", run: (*checker).expandKnown, writes: true},
		{name: "expand/dangling-refs-missing", run: (*checker).expandDangling, writes: true},
		{name: "watch/resume", run: (*checker).watchResume, writes: true},
		{name: "writes/delete", run: (*checker).deleteThenRecreate, writes: true},
	}
}
