package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lookahead-dev/lookahead/internal/store/postgres"
	"github.com/lookahead-dev/lookahead/internal/store/postgres/pgtest"
	"github.com/lookahead-dev/lookahead/internal/store/postgres/shop"
)

// W6Config sizes W6: an ORM's lazy loading over the PostgreSQL shop.
type W6Config struct {
	Shop        shop.Size
	PageOrders  int   // orders one application query returns
	Pages       int   // queries per repetition, each on other orders
	Reps        int   // repetitions, each with a fresh sidecar (cold cache)
	LatenciesMS []int // one-way latency of the application's network hop
}

// w6 rows: three SQL clients of the database and the application through
// a sidecar in front of the PostgreSQL origin.
const (
	w6NPlus1     = "SQL: N+1 (lazy ORM)"
	w6DataLoader = "SQL: DataLoader (batched per level)"
	w6Join       = "SQL: one JOIN (lower bound)"
	w6Cold       = "lookahead cold"
	w6Warm       = "lookahead warm"
	w6GraphCold  = "extra: lookahead GetGraph cold"
	w6GraphWarm  = "extra: lookahead GetGraph warm"
)

var w6Rows = []string{w6NPlus1, w6DataLoader, w6Join, w6Cold, w6Warm, w6GraphCold, w6GraphWarm}

// w6Sample is one page of one row.
type w6Sample struct {
	Time    time.Duration
	Calls   float64 // SQL queries, or the sidecar's origin round trips
	Objects int     // rows or objects the application received
}

// w6Latency is W6 at one latency.
type w6Latency struct {
	LatencyMS       int
	SQLRTT, GRPCRTT time.Duration
	Samples         map[string][]w6Sample
}

type w6Result struct {
	Cfg       W6Config
	Rows      int // rows loaded
	Load      time.Duration
	NA        string // not run, and why
	Latencies []w6Latency
}

type w6 struct {
	e      *env
	cfg    W6Config
	db     *link // the application's hop to PostgreSQL
	origin *origin
	conn   *pgx.Conn // the SQL application's connection, through db
}

func runW6(ctx context.Context, e *env, cfg W6Config) (*w6Result, error) {
	res := &w6Result{Cfg: cfg}
	if _, err := pgtest.BinDir(); err != nil {
		if os.Getenv("CI") == "true" {
			return nil, fmt.Errorf("w6: %w; CI must provide them (.ci/run installs postgresql)", err)
		}
		res.NA = "PostgreSQL server binaries not installed"
		e.progress("w6: %s: skipped", res.NA)
		return res, nil
	}
	w := &w6{e: e, cfg: cfg}
	pg, err := w.start(ctx, res)
	if pg != nil {
		defer pg.Stop()
	}
	if err != nil {
		return nil, err
	}
	defer w.origin.stop()
	defer w.conn.Close(context.Background())
	for _, ms := range cfg.LatenciesMS {
		l, err := w.runLatency(ctx, ms)
		if err != nil {
			return nil, err
		}
		res.Latencies = append(res.Latencies, l)
	}
	return res, nil
}

// start runs PostgreSQL with the shop loaded and the change log installed,
// the origin over it, and the proxies of the application's hop.
func (w *w6) start(ctx context.Context, res *w6Result) (*pgtest.Cluster, error) {
	begun := time.Now()
	pg, err := pgtest.Start(ctx)
	if err != nil {
		return nil, err
	}
	url, err := pg.CreateDB(ctx, "shop")
	if err != nil {
		return pg, err
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return pg, err
	}
	items, err := shop.Load(ctx, conn, w.cfg.Shop)
	conn.Close(ctx)
	if err != nil {
		return pg, err
	}
	res.Rows = w.cfg.Shop.Customers + w.cfg.Shop.Products + w.cfg.Shop.Orders + items
	m, err := postgres.ParseMapping(shop.Mapping)
	if err != nil {
		return pg, err
	}
	if err := postgres.Install(ctx, url, m); err != nil {
		return pg, err
	}
	res.Load = time.Since(begun)
	w.e.progress("w6: PostgreSQL shop of %d rows loaded in %s", res.Rows, fmtDur(res.Load))
	mapping := filepath.Join(w.e.tmp, "w6-mapping.yaml")
	if err := os.WriteFile(mapping, shop.Mapping, 0o644); err != nil {
		return pg, err
	}
	if w.origin, err = w.e.startOrigin(ctx, "w6", "--store", url, "--mapping", mapping); err != nil {
		return pg, err
	}
	if w.db, err = w.e.px.add("w6-postgres", "127.0.0.1:"+strconv.Itoa(pg.Port())); err != nil {
		w.origin.stop()
		return pg, err
	}
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://postgres@%s/shop?sslmode=disable", w.db.Addr()))
	if err != nil {
		w.origin.stop()
		return pg, err
	}
	if w.conn, err = pgx.ConnectConfig(ctx, cfg); err != nil {
		w.origin.stop()
		return pg, err
	}
	return pg, nil
}

// pageIDs are the order ids of page p of repetition rep: spread over the
// shop, other orders for every page of a run.
func (w *w6) pageIDs(rep, p int) []int64 {
	ids := make([]int64, w.cfg.PageOrders)
	base := (rep*w.cfg.Pages + p) * w.cfg.PageOrders
	for i := range ids {
		ids[i] = int64(1 + ((base+i)*7919)%w.cfg.Shop.Orders)
	}
	return ids
}

func (w *w6) runLatency(ctx context.Context, ms int) (w6Latency, error) {
	l := w6Latency{LatencyMS: ms, Samples: map[string][]w6Sample{}}
	for _, lk := range []*link{w.db, w.origin.link} {
		if err := lk.setLatency(ms); err != nil {
			return l, err
		}
	}
	var err error
	if l.GRPCRTT, err = pingRTT(ctx, w.origin.Addr(), 50); err != nil {
		return l, err
	}
	if l.SQLRTT, err = w.sqlRTT(ctx, 50); err != nil {
		return l, err
	}
	w.e.progress("w6: latency %d ms one way: measured round trip %s (SQL), %s (gRPC)", ms, fmtMS(l.SQLRTT), fmtMS(l.GRPCRTT))
	// The SQL client's statements are prepared once, before anything is
	// timed, as a long-running application's are.
	for _, run := range []func(context.Context, []int64) (w6Sample, error){w.nPlus1, w.dataLoader, w.join} {
		if _, err := run(ctx, w.pageIDs(w.cfg.Reps, 0)); err != nil {
			return l, err
		}
	}
	units := []string{w6NPlus1, w6DataLoader, w6Join, w6Cold, w6GraphCold}
	for rep := 0; rep < w.cfg.Reps; rep++ {
		for _, u := range rotate(units, rep) {
			if err := w.runUnit(ctx, u, rep, l.Samples); err != nil {
				return l, fmt.Errorf("w6 %s: %w", u, err)
			}
		}
		w.e.progress("w6: %d ms rep %d/%d done", ms, rep+1, w.cfg.Reps)
	}
	return l, nil
}

// runUnit runs one row for every page of rep; the lookahead units run cold
// on a fresh sidecar, then warm on the same one.
func (w *w6) runUnit(ctx context.Context, unit string, rep int, out map[string][]w6Sample) error {
	sql := map[string]func(context.Context, []int64) (w6Sample, error){w6NPlus1: w.nPlus1, w6DataLoader: w.dataLoader, w6Join: w.join}
	if run, ok := sql[unit]; ok {
		for p := 0; p < w.cfg.Pages; p++ {
			s, err := run(ctx, w.pageIDs(rep, p))
			if err != nil {
				return err
			}
			out[unit] = append(out[unit], s)
		}
		return nil
	}
	sc, err := w.e.startSidecar(ctx, w.origin.Addr(), "--prefetch-mode", "static", "--prefetch-depth", "2",
		"--prefetch-fields", "customer,line_items,product", "--prefetch-max-objects", "100000")
	if err != nil {
		return err
	}
	defer sc.stop()
	walk, cold, warm := w.lazyWalk, w6Cold, w6Warm
	if unit == w6GraphCold {
		walk, cold, warm = w.getGraph, w6GraphCold, w6GraphWarm
	}
	for _, name := range []string{cold, warm} {
		for p := 0; p < w.cfg.Pages; p++ {
			before, err := sc.scrape(ctx)
			if err != nil {
				return err
			}
			s, err := walk(ctx, sc.c, w.pageIDs(rep, p))
			if err != nil {
				return err
			}
			after, err := sc.scrape(ctx)
			if err != nil {
				return err
			}
			s.Calls = countersOf(after).minus(countersOf(before)).RoundTrips
			out[name] = append(out[name], s)
		}
	}
	return nil
}

func (w *w6) sqlRTT(ctx context.Context, n int) (time.Duration, error) {
	var ds []time.Duration
	for i := 0; i < n+5; i++ {
		start := time.Now()
		if _, err := w.conn.Exec(ctx, "SELECT 1"); err != nil {
			return 0, err
		}
		if i >= 5 {
			ds = append(ds, time.Since(start))
		}
	}
	return medianDur(ds), nil
}

// orderIDs formats ids as the origin's object ids.
func orderIDs(ids []int64) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = "orders/" + strconv.FormatInt(id, 10)
	}
	return out
}

var errW6Short = errors.New("w6: fewer orders than asked for")
