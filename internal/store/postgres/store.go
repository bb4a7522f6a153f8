package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lookahead-dev/lookahead/internal/store"
)

// Config says what to open. URL and Mapping are required; the rest has
// documented zero-value defaults.
type Config struct {
	// URL is the database's connection string (postgres://…); pool settings
	// such as pool_max_conns go in it.
	URL string
	// Mapping says which tables are object types.
	Mapping *Mapping
	// QueryTimeout bounds each store call's queries; zero = 10s.
	QueryTimeout time.Duration
	// ReconnectBackoff is the longest wait between attempts of the change
	// listener to reconnect; zero = 5s.
	ReconnectBackoff time.Duration
	// Log receives the listener's reconnects; nil = slog.Default().
	Log *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.QueryTimeout == 0 {
		c.QueryTimeout = 10 * time.Second
	}
	if c.ReconnectBackoff == 0 {
		c.ReconnectBackoff = 5 * time.Second
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("postgres: no database URL"))
	}
	if c.Mapping == nil {
		errs = append(errs, errors.New("postgres: no mapping"))
	}
	if c.QueryTimeout < 0 {
		errs = append(errs, fmt.Errorf("postgres: query timeout %v is negative", c.QueryTimeout))
	}
	if c.ReconnectBackoff < 0 {
		errs = append(errs, fmt.Errorf("postgres: reconnect backoff %v is negative", c.ReconnectBackoff))
	}
	return errors.Join(errs...)
}

// Store serves objects from an existing schema through a Mapping. It is safe
// for concurrent use. Its one goroutine, the change listener, is stopped by
// Close.
type Store struct {
	cfg      Config
	pool     *pgxpool.Pool
	tables   map[string]*table // by type name
	order    []*table          // mapping order, for routing ids
	log      string            // quoted schema of the change log
	channel  string            // NOTIFY channel
	identity string

	rev *store.Revisions // last revision seen

	stop context.CancelFunc
	done chan struct{} // closed when the listener returned
}

// Open connects, checks the mapping against the catalog and the change log
// (see Install), and starts listening for changes. A mapping naming a
// missing table or column fails here, naming it.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	pool, err := pgxpool.New(ctx, cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s, err := open(ctx, cfg, pool)
	if err != nil {
		pool.Close()
		return nil, err
	}
	lctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	go s.listen(lctx)
	return s, nil
}

func open(ctx context.Context, cfg Config, pool *pgxpool.Pool) (*Store, error) {
	if err := pool.Ping(ctx); err != nil {
		return nil, fmt.Errorf("postgres: connecting: %w", classify(err))
	}
	tables, err := compile(ctx, pool, cfg.Mapping)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s := &Store{
		cfg:     cfg,
		pool:    pool,
		tables:  tables,
		log:     pgx.Identifier{cfg.Mapping.ChangeLog}.Sanitize(),
		channel: notifyChannel(cfg.Mapping.ChangeLog),
		done:    make(chan struct{}),
	}
	for i := range cfg.Mapping.Types {
		s.order = append(s.order, tables[cfg.Mapping.Types[i].Name])
	}
	if err := checkInstalled(ctx, pool, cfg.Mapping, tables); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	var sysid uint64
	var db string
	err = pool.QueryRow(ctx, "SELECT system_identifier, current_database() FROM pg_control_system()").Scan(&sysid, &db)
	if err != nil {
		return nil, fmt.Errorf("postgres: reading the system identifier: %w", classify(err))
	}
	s.identity = fmt.Sprintf("postgres:%d/%s/%s", sysid, db, cfg.Mapping.ChangeLog)
	rev, err := s.readRevision(ctx)
	if err != nil {
		return nil, err
	}
	s.rev = store.NewRevisions(rev)
	return s, nil
}

// Identity names the dataset: the cluster's system identifier, the
// database and the change log's schema. It changes when the origin is
// pointed at another cluster (a restore from a dump included: initdb makes a
// new identifier), another database or another change log.
func (s *Store) Identity() string { return s.identity }

// Close stops the listener, closes the pool and wakes every Changed waiter.
// It is idempotent; later calls of other methods return store.ErrClosed.
func (s *Store) Close() error {
	if !s.rev.Close() {
		return nil
	}
	s.stop()
	<-s.done
	s.pool.Close()
	return nil
}

func (s *Store) isClosed() bool { return s.rev.Closed() }

// ctx bounds one store call by Config.QueryTimeout.
func (s *Store) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.cfg.QueryTimeout)
}

// classify marks errors that mean the database cannot be reached (refused
// or broken connections, a server shutting down or starting) as
// store.ErrUnavailable; server errors about the query itself stay as they are.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case len(pe.Code) == 5 && pe.Code[:2] == "08", // connection exception
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03": // shutdown, crash, cannot connect now
			return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
		case pe.Code[:2] == "22", pe.Code[:2] == "23": // data exception, integrity violation
			return fmt.Errorf("%w: %w", store.ErrInvalid, err)
		}
		return err
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	if errors.Is(err, pgx.ErrNoRows) || errors.Is(err, pgx.ErrTxClosed) {
		return err
	}
	// Dial errors, broken connections, closed pools: nothing answered.
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}
