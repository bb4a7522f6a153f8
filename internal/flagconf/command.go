package flagconf

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/lookahead-dev/lookahead/internal/buildinfo"
)

// Command is what every lookahead command line has besides its own
// settings (--config, --check-config, --version, --log-level) and the one
// way both commands act on them (Run).
type Command struct {
	Name        string     // "sidecar": LOOKAHEAD_SIDECAR_* variables, the prefix of messages
	LogLevel    slog.Level // --log-level, once FinishLogLevel has run
	CheckConfig bool       // print Settings and exit
	Version     bool       // print the version and exit
	Settings    []string   // every setting as name=value, for --check-config (Record)

	config, level string
}

// Register adds the common flags to fs.
func (c *Command) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.level, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&c.config, "config", "", "YAML file of settings: each flag's name is a key (precedence: flags, then "+c.envPrefix()+"_* environment variables, then this file, then defaults)")
	fs.BoolVar(&c.CheckConfig, "check-config", false, "check every setting (flags, environment, --config file), print them as name=value and exit: status 0 if all are valid, 2 if not; nothing is started")
	fs.BoolVar(&c.Version, "version", false, "print the version and exit")
}

func (c *Command) envPrefix() string { return "LOOKAHEAD_" + strings.ToUpper(c.Name) }

// Parse parses args into fs, then sets what they left unset from the
// environment and the --config file (Apply). With --version it stops after
// the parse: nothing else is read.
func (c *Command) Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.Version {
		return nil
	}
	if err := Apply(fs, c.config, os.Environ(), c.envPrefix(), "config", "check-config", "version"); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: settings are flags (-name value)", fs.Args())
	}
	return nil
}

// FinishLogLevel converts --log-level; the error names the flag.
func (c *Command) FinishLogLevel() error {
	if err := c.LogLevel.UnmarshalText([]byte(c.level)); err != nil {
		return fmt.Errorf("-log-level %q: want debug, info, warn or error", c.level)
	}
	return nil
}

// Record keeps every setting of fs as name=value for --check-config: call
// it once they are all valid.
func (c *Command) Record(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != "check-config" && f.Name != "version" {
			c.Settings = append(c.Settings, f.Name+"="+f.Value.String())
		}
	})
}

// Run acts on a parse's outcome and returns the exit status: 2 for a bad
// setting (parseErr), 0 after --help, --version or --check-config, else
// run's: 1 when it stopped on an error. run gets a JSON logger at
// --log-level and a context that SIGINT and SIGTERM end.
func (c *Command) Run(stdout, stderr io.Writer, parseErr error, run func(context.Context, *slog.Logger) error) int {
	switch {
	case errors.Is(parseErr, flag.ErrHelp):
		return 0
	case parseErr != nil:
		fmt.Fprintf(stderr, "%s: %v\n", c.Name, parseErr)
		return 2
	case c.Version:
		fmt.Fprintln(stdout, c.Name, buildinfo.Get())
		return 0
	case c.CheckConfig:
		fmt.Fprintln(stdout, strings.Join(c.Settings, "\n"))
		return 0
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: c.LogLevel}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, log); err != nil {
		log.Error(c.Name+" stopped", "err", err)
		return 1
	}
	return 0
}
