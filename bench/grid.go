package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// A grid is what W5 and W7 share: access patterns, each run by every row (a
// sidecar setting, a static grid point or a peer) at each latency, rows
// interleaved within a repetition, one fresh sidecar per run.
type grid struct {
	name      string // "w5": progress lines and errors
	origin    *origin
	latencies []int // one-way latency of the proxy, one table each
	reps      int
	patterns  []string
	rows      []w5Row
	// prepare returns the run of pattern pi in repetition rep: the same work
	// for every row of that repetition, other work in the next.
	prepare func(rep, pi int) func(ctx context.Context, r w5Row) (w5Sample, error)
}

// gridRows are base, then one row per static setting, with the rows that
// need --prefetch-mode adaptive marked not run when bin/sidecar lacks it.
func gridRows(base []w5Row, statics []W5Static, adaptive bool) []w5Row {
	rows := slices.Clone(base)
	for _, s := range statics {
		rows = append(rows, w5Row{Name: s.name(), Static: true, Args: []string{"--prefetch-mode", "static",
			"--prefetch-depth", strconv.Itoa(s.Depth), "--prefetch-max-objects", strconv.Itoa(s.MaxObjects)}})
	}
	for i := range rows {
		if slices.Contains(rows[i].Args, "adaptive") && !adaptive {
			rows[i].NA = "n/a (bin/sidecar rejects --prefetch-mode adaptive)"
		}
	}
	return rows
}

// run measures the grid: one w5Latency per latency, Cells[pattern][row].
func (e *env) runGrid(ctx context.Context, g grid) ([]w5Latency, error) {
	var out []w5Latency
	for _, ms := range g.latencies {
		if err := g.origin.link.setLatency(ms); err != nil {
			return nil, err
		}
		rtt, err := pingRTT(ctx, g.origin.Addr(), 50)
		if err != nil {
			return nil, err
		}
		e.progress("%s: latency %d ms one way: measured round trip %s", g.name, ms, fmtMS(rtt))
		l := w5Latency{LatencyMS: ms, RTT: rtt, Patterns: g.patterns}
		for range g.patterns {
			var cells []*w5Cell
			for _, r := range g.rows {
				cells = append(cells, &w5Cell{Row: r})
			}
			l.Cells = append(l.Cells, cells)
		}
		for rep := range g.reps {
			if err := e.gridRep(ctx, g, &l, rep); err != nil {
				return nil, err
			}
		}
		out = append(out, l)
	}
	return out, nil
}

// gridRep runs one repetition of every pattern, rows in a rotating order.
func (e *env) gridRep(ctx context.Context, g grid, l *w5Latency, rep int) error {
	for pi, p := range g.patterns {
		run := g.prepare(rep, pi)
		for _, c := range rotate(l.Cells[pi], rep+pi) {
			if c.Row.NA != "" {
				continue
			}
			s, err := run(ctx, c.Row)
			if err != nil {
				return fmt.Errorf("%s %s %s: %w", g.name, p, c.Row.Name, err)
			}
			c.Samples = append(c.Samples, s)
			e.progress("%s: %d ms rep %d/%d %-18s %-28s %s, %s round trips, %s fetched / %d used",
				g.name, l.LatencyMS, rep+1, g.reps, p, c.Row.Name, fmtDur(s.Wall), fmtCount(s.RoundTrips), fmtCount(s.Fetched), s.Used)
		}
	}
	return nil
}

// measureSidecar runs a fresh sidecar with args against originAddr, times
// work (which returns the number of distinct objects it read) and takes the
// origin traffic from the sidecar's metrics, its CPU time and peak RSS from
// /proc.
func (e *env) measureSidecar(ctx context.Context, originAddr string, args []string,
	work func(ctx context.Context, sc *sidecar) (int, error)) (s w5Sample, err error) {
	err = e.withSidecar(ctx, originAddr, args, func(sc *sidecar) error {
		before, err := sc.scrape(ctx)
		if err != nil {
			return err
		}
		cpu, start := procCPU(sc.proc.PID()), time.Now()
		if s.Used, err = work(ctx, sc); err != nil {
			return err
		}
		s.Wall, s.CPU = time.Since(start), procCPU(sc.proc.PID())-cpu
		s.PeakRSS = procStatusKB(sc.proc.PID(), "VmHWM")
		after, err := sc.scrape(ctx)
		if err != nil {
			return err
		}
		delta := func(name string) float64 { return after.Sum(name) - before.Sum(name) }
		s.RoundTrips = delta("lookahead_origin_round_trips_total")
		s.Fetched = delta("lookahead_origin_objects_fetched_total")
		s.Planning = time.Duration(delta("lookahead_prefetch_planning_seconds_total") * float64(time.Second))
		return nil
	})
	return s, err
}

// getEach reads ids through sc one Get each, in order, as an application
// reads; ids that do not exist are left out.
func getEach(sc *sidecar) w5Fetch {
	return func(ctx context.Context, ids []string) ([]*lookaheadv1.Object, error) {
		var out []*lookaheadv1.Object
		for _, id := range ids {
			o, _, err := sc.c.Get(ctx, id, nil)
			switch {
			case status.Code(err) == codes.NotFound:
			case err != nil:
				return nil, fmt.Errorf("get %s: %w", id, err)
			default:
				out = append(out, o)
			}
		}
		return out, nil
	}
}
