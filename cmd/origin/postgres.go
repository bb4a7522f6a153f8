package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/lookahead-dev/lookahead/internal/originserver"
	"github.com/lookahead-dev/lookahead/internal/store"
	"github.com/lookahead-dev/lookahead/internal/store/postgres"
)

// pgOptions are the PostgreSQL backend's settings.
type pgOptions struct {
	url, mappingPath string
	mapping          *postgres.Mapping // read from mappingPath by validate
}

func (p *pgOptions) flags(fs *flag.FlagSet) {
	fs.StringVar(&p.url, "store", "", "store to serve: empty = the embedded bbolt store under -data; postgres://… = an existing PostgreSQL schema through -mapping (see docs/postgres.md)")
	fs.StringVar(&p.mappingPath, "mapping", "", "with -store postgres://…: YAML mapping of tables to object types ('origin postgres-introspect' writes a starter)")
}

func (p *pgOptions) validate(o *options) error {
	if p.url == "" {
		if p.mappingPath != "" {
			return errors.New("-mapping without -store postgres://…")
		}
		return nil
	}
	var errs []error
	if !strings.HasPrefix(p.url, "postgres://") && !strings.HasPrefix(p.url, "postgresql://") {
		errs = append(errs, errors.New("-store: want empty (bbolt) or a postgres:// URL"))
	}
	if o.seed != "none" || o.loadPath != "" || o.reseed {
		errs = append(errs, errors.New("-seed, -load and -reseed fill the bbolt store: not with -store postgres://…"))
	}
	if p.mappingPath == "" {
		errs = append(errs, errors.New("-store postgres://… needs -mapping"))
	} else if m, err := postgres.ReadMapping(p.mappingPath); err != nil {
		errs = append(errs, fmt.Errorf("-mapping: %w", err))
	} else {
		p.mapping = m
	}
	return errors.Join(errs...)
}

// servedStore is the store run serves: bolt is set for the bbolt store,
// which may need seeding.
type servedStore struct {
	originserver.Store
	bolt  *store.Store
	close func() error
}

// served is the store as the server is to see it: the opened store itself,
// not this wrapper, whose embedding would hide the optional interfaces the
// server looks for. Served through the wrapper, the bbolt store's encoded
// reads were out of sight, and the reference origin decoded every object
// it sent and encoded it again (W1: 3–5 µs of origin CPU per object).
func (s *servedStore) served() originserver.Store { return s.Store }

// openStore opens the bbolt store under -data, or the PostgreSQL store.
func openStore(ctx context.Context, o *options, log *slog.Logger) (*servedStore, error) {
	if o.pg.url != "" {
		st, err := postgres.Open(ctx, postgres.Config{URL: o.pg.url, Mapping: o.pg.mapping, Log: log})
		if err != nil {
			return nil, err
		}
		log.Info("postgres store open", "identity", st.Identity(), "revision", st.Revision(), "types", len(o.pg.mapping.Types))
		return &servedStore{Store: st, close: st.Close}, nil
	}
	if err := os.MkdirAll(o.dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	st, err := store.Open(filepath.Join(o.dataDir, "origin.db"), store.Config{})
	if err != nil {
		return nil, err
	}
	return &servedStore{Store: st, bolt: st, close: st.Close}, nil
}

// postgresCommand runs "origin postgres-introspect" or "origin
// postgres-install"; ok is false when args name neither.
func postgresCommand(args []string, stdout, stderr io.Writer) (status int, ok bool) {
	if len(args) == 0 || (args[0] != "postgres-introspect" && args[0] != "postgres-install") {
		return 0, false
	}
	cmd := args[0]
	fs := flag.NewFlagSet("origin "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("store", "", "the database: postgres://…")
	mapping := fs.String("mapping", "", "postgres-install: the mapping whose tables get change triggers")
	schemas := fs.String("schemas", "public", "postgres-introspect: comma-separated schemas to map")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage:\n  origin postgres-introspect --store postgres://… [--schemas public] > mapping.yaml\n"+
			"  origin postgres-install --store postgres://… --mapping mapping.yaml\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, true
		}
		return 2, true
	}
	if *url == "" {
		fmt.Fprintln(stderr, "origin "+cmd+": --store postgres://… is required")
		return 2, true
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cmd == "postgres-introspect" {
		out, err := postgres.Introspect(ctx, *url, strings.Split(*schemas, ","))
		if err != nil {
			fmt.Fprintln(stderr, "origin "+cmd+":", err)
			return 1, true
		}
		_, _ = stdout.Write(out)
		return 0, true
	}
	m, err := postgres.ReadMapping(*mapping)
	if err != nil {
		fmt.Fprintln(stderr, "origin "+cmd+":", err)
		return 2, true
	}
	if err := postgres.Install(ctx, *url, m); err != nil {
		fmt.Fprintln(stderr, "origin "+cmd+":", err)
		return 1, true
	}
	fmt.Fprintf(stdout, "change log installed in schema %q, triggers on %d tables\n", m.ChangeLog, len(m.Types))
	return 0, true
}
