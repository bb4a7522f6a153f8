// Command conformance checks an origin against lookahead's origin contract
// (docs/origin.md) over gRPC and prints a table of passed, failed and
// skipped checks with their reasons. It exits 1 when a check failed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/lookahead-dev/lookahead/internal/conformance"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/tlsconfig"
)

type options struct {
	target string
	cfg    conformance.Config
	tls    tlsconfig.Client
}

func parseFlags(args []string, out io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: conformance --target ADDR [--writes]\n\nChecks an origin against lookahead's origin contract (docs/origin.md).\nRead-only unless --writes; exit status 1 when a check failed.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.target, "target", "", "origin address (host:port or a gRPC target such as unix:///path)")
	fs.BoolVar(&o.cfg.Writes, "writes", false, "also run the checks that write (Put, Delete, versions, Watch resume, Expand over a written graph); they write only ids under --prefix and delete them afterwards")
	fs.StringVar(&o.cfg.Prefix, "prefix", "conformance/", "id prefix of everything the write checks create (a random part is added per run)")
	fs.DurationVar(&o.cfg.Timeout, "timeout", 10*time.Second, "limit of each call")
	fs.DurationVar(&o.cfg.WatchWait, "watch-wait", 5*time.Second, "how long a Watch check waits for the changes it expects")
	fs.StringVar(&o.tls.CAFile, "tls-ca", "", "connect over TLS, trusting these CAs (PEM); empty with other --tls-* flags = the system's roots")
	fs.StringVar(&o.tls.CertFile, "tls-cert", "", "client certificate (PEM) for an origin that requires mutual TLS")
	fs.StringVar(&o.tls.KeyFile, "tls-key", "", "private key (PEM) of --tls-cert")
	fs.StringVar(&o.tls.ServerName, "tls-server-name", "", "name the origin's certificate must carry; empty = the host of --target")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	var errs []error
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments %q: settings are flags", fs.Args()))
	}
	if o.target == "" {
		errs = append(errs, errors.New("--target is empty: name the origin to check"))
	}
	if o.cfg.Timeout <= 0 || o.cfg.WatchWait <= 0 {
		errs = append(errs, fmt.Errorf("--timeout %v and --watch-wait %v: must be positive", o.cfg.Timeout, o.cfg.WatchWait))
	}
	return o, errors.Join(errs...)
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run checks the origin and returns the exit status: 0 all passed or
// skipped, 1 a check failed, 2 bad flags.
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "conformance:", err)
		return 2
	}
	tlsCfg, err := o.tls.Load()
	if err != nil {
		fmt.Fprintln(stderr, "conformance: --tls-*:", err)
		return 2
	}
	cc, err := origin.Dial(o.target, origin.DialConfig{TLS: tlsCfg})
	if err != nil {
		fmt.Fprintln(stderr, "conformance:", err)
		return 2
	}
	defer cc.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rs, err := conformance.Run(ctx, cc, o.cfg)
	if err != nil {
		fmt.Fprintln(stderr, "conformance:", err)
		return 2
	}
	fmt.Fprintf(stdout, "origin %s\n", o.target)
	if err := conformance.Print(stdout, rs); err != nil {
		fmt.Fprintln(stderr, "conformance:", err)
		return 2
	}
	if conformance.Failed(rs) {
		return 1
	}
	return 0
}
