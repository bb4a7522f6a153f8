package bench

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/lookahead-dev/lookahead/bench/plot"
)

// best returns the static grid cell with the lowest median wall time.
func bestStatic(cells []*w5Cell) *w5Cell {
	var best *w5Cell
	for _, c := range cells {
		if c.Row.Static && len(c.Samples) > 0 && (best == nil || c.wall() < best.wall()) {
			best = c
		}
	}
	return best
}

func cellNamed(cells []*w5Cell, name string) *w5Cell {
	for _, c := range cells {
		if c.Row.Name == name && len(c.Samples) > 0 {
			return c
		}
	}
	return nil
}

// ratio is a's median wall time over b's; NaN when either is missing.
func ratio(a, b *w5Cell) float64 {
	if a == nil || b == nil || len(a.Samples) == 0 || b.wall() == 0 {
		return math.NaN()
	}
	return float64(a.wall()) / float64(b.wall())
}

// ordered lists a pattern's cells for the table: the sidecar rows, the best
// static, the peer, then the rest of the grid.
func ordered(cells []*w5Cell) []*w5Cell {
	best := bestStatic(cells)
	var main, peer, grid []*w5Cell
	for _, c := range cells {
		switch {
		case c.Row.Batched:
			peer = append(peer, c)
		case c == best:
		case c.Row.Static:
			grid = append(grid, c)
		default:
			main = append(main, c)
		}
	}
	if best != nil {
		main = append(main, best)
	}
	return append(append(main, peer...), grid...)
}

func (l w5Latency) table() string {
	var rows [][]string
	for pi, name := range l.Patterns {
		cells := l.Cells[pi]
		off, best := cellNamed(cells, "off"), bestStatic(cells)
		for _, c := range ordered(cells) {
			label := c.Row.Name
			if c == best {
				label = "**best static**: " + strings.TrimPrefix(label, "static ")
			}
			if c.Row.NA != "" || len(c.Samples) == 0 {
				na := c.Row.NA
				if na == "" {
					na = "not run"
				}
				rows = append(rows, []string{name, label, na, "", "", "", "", "", ""})
				continue
			}
			fetched := c.med(func(s w5Sample) float64 { return s.Fetched })
			used := c.med(func(s w5Sample) float64 { return float64(s.Used) })
			rss, cpu := "–", "–"
			if !c.Row.Batched {
				rss = fmtBytes(c.med(func(s w5Sample) float64 { return float64(s.PeakRSS) }))
				cpu = fmtDur(time.Duration(c.med(func(s w5Sample) float64 { return float64(s.CPU) })))
				if p := c.med(func(s w5Sample) float64 { return float64(s.Planning) }); p > 0 {
					cpu += " (planning " + fmtDur(time.Duration(p)) + ")"
				}
			}
			rows = append(rows, []string{name, label, fmtDur(c.wall()), fmtRatio(ratio(c, off)), fmtRatio(ratio(c, best)),
				fmtCount(c.med(func(s w5Sample) float64 { return s.RoundTrips })),
				fmt.Sprintf("%s / %s (%s)", fmtCount(fetched), fmtCount(used), fmtRatio(fetched/used)), cpu, rss})
		}
	}
	return table([]string{"pattern", "setting", "wall time", "× off", "× best static", "origin round trips",
		"objects fetched / used", "CPU (sidecar)", "peak RSS (sidecar)"}, rows)
}

func (r *reporter) w5(res *w5Result) {
	c := res.Cfg
	var b strings.Builder
	fmt.Fprintf(&b, "## W5 — a skewed social graph\n\n")
	fmt.Fprintf(&b, "`bin/origin --seed social --social-users %d --social-max-friends %d --payload-bytes %d` (graph.Social): %d objects "+
		"(users, posts, comments, products), power-law friend counts with %d hub%s of 1,000 or more friends (%v), friendship both ways, "+
		"popular products shared, a few refs to deleted objects, every ref list most recent first. The application reads through the "+
		"sidecar's gRPC API one Get per object, level by level, each object once per session:\n\n", c.Users, c.MaxFriends, c.PayloadBytes,
		res.Objects, len(res.Hubs), plural(len(res.Hubs), "", "s"), res.Hubs)
	fmt.Fprintf(&b, "- **friends of friends**: %d user%s, each with %d to %d users within two friendships; the user, every friend, every friend's friend.\n", c.FoFStarts, plural(c.FoFStarts, "", "s"), c.FoFMin, c.FoFMax)
	fmt.Fprintf(&b, "- **feed**: %d user%s; the user, its first %d friends (most recent), each friend's first %d posts.\n", c.FeedStarts, plural(c.FeedStarts, "", "s"), c.FeedFriends, c.FeedPosts)
	fmt.Fprintf(&b, "- **hot spot**: %d profile views of users drawn by a Zipf law (s = 1.1) over friend count, the most followed most often; "+
		"each view reads the user, its first %d posts and first %d friends. Repeated views are cache hits for the sidecar.\n", c.HotVisits, c.HotPosts, c.HotFriends)
	if c.FoFReaders > 1 {
		fmt.Fprintf(&b, "- **%s**: friends of friends read by %d readers at once, through the one connection, each its own %d user%s (chosen as above): "+
			"a service's handlers side by side, their reads interleaved at the sidecar.\n", w5ReadersName(c.FoFReaders), c.FoFReaders, c.FoFStarts, plural(c.FoFStarts, "", "s"))
	}
	b.WriteString("\n" + w5Notes(c))
	r.emitGrid(&b, "W5", res.Latencies, res)
}

// emitGrid ends a grid workload's section begun in b: a table per
// latency, the cells where the default loses, the plots, and res as the
// workload's raw results.
func (r *reporter) emitGrid(b *strings.Builder, workload string, lats []w5Latency, res any) {
	for _, l := range lats {
		fmt.Fprintf(b, "\n### Latency %d ms one way — measured round trip %s\n\n", l.LatencyMS, fmtMS(l.RTT))
		b.WriteString(r.addTable(l.table()))
	}
	b.WriteString(gridLosses(lats))
	b.WriteString(r.gridPlots(workload, lats))
	r.addRaw(strings.ToLower(workload), res)
	r.emit(b.String())
}

// gridPlots draws one plot per pattern of a grid workload and returns the
// markdown that shows them.
func (r *reporter) gridPlots(workload string, lats []w5Latency) string {
	if len(lats) == 0 {
		return ""
	}
	var b strings.Builder
	for pi, name := range lats[0].Patterns {
		file := strings.ToLower(workload) + "_" + strings.ReplaceAll(name, " ", "_") + ".svg"
		b.WriteString("\n" + r.plot(file, workload+" "+name, gridPlot(workload, lats, pi, name).SVG()))
	}
	return b.String()
}

// gridPlot draws one pattern's wall time over off's against the round trip.
func gridPlot(workload string, lats []w5Latency, pi int, name string) plot.LineChart {
	series := map[string]*plot.Series{}
	var order []string
	for _, l := range lats {
		cells := l.Cells[pi]
		off, best := cellNamed(cells, "off"), bestStatic(cells)
		for _, c := range cells {
			if c.Row.Name == "off" || (c.Row.Static && c != best) {
				continue
			}
			key := c.Row.Name
			if c.Row.Static {
				key = "best static"
			}
			s := series[key]
			if s == nil {
				s = &plot.Series{Name: key}
				series[key] = s
				order = append(order, key)
			}
			s.X = append(s.X, l.RTT.Seconds()*1e3)
			s.Y = append(s.Y, ratio(c, off))
		}
	}
	ch := plot.LineChart{Title: workload + " " + name + ": wall time ÷ off vs round trip", XLabel: "measured origin round trip (ms)",
		YLabel: "wall time ÷ off (lower is better)", RefY: 1, RefLabel: "off"}
	for _, k := range order {
		ch.Series = append(ch.Series, *series[k])
	}
	return ch
}

func w5Notes(c W5Config) string {
	var grid []string
	for _, s := range c.Statics {
		grid = append(grid, fmt.Sprintf("depth %d max %d", s.Depth, s.MaxObjects))
	}
	return fmt.Sprintf(`Rows (bench/w5.go, w5SidecarRows, the one place to change them): **off** is `+"`--prefetch-mode off`"+`; **default** the sidecar with no prefetch flag; **adaptive** `+"`--prefetch-mode adaptive`"+`; **best static** the fastest point, per pattern and latency, of a grid of `+"`--prefetch-mode static --prefetch-depth D --prefetch-max-objects M`"+` settings (%s; every point runs like the other rows and is listed below it); **peer: batched client** no sidecar, one origin BatchGet per level of a session, as a DataLoader batches one tick of an application, nothing kept between sessions. Every run starts a fresh sidecar (cold cache); %d repetitions, rows interleaved within each (the order rotates), the same sessions for every row of a repetition, other sessions in the next; figures are medians, ratios taken between medians of this run. Wall time covers all sessions of the pattern. Origin round trips and objects fetched come from the sidecar's lookahead_origin_round_trips_total and lookahead_origin_objects_fetched_total (all reasons: demand and prefetch); the peer counts its own. Objects used: distinct objects the application read. CPU: the sidecar's CPU time over the run, all threads (/proc/PID/task/*/schedstat); in brackets, the learned planner's planning time (lookahead_prefetch_planning_seconds_total: learning from reads and choosing what to fetch, wall time, on cores the whole run shares). Peak RSS: the sidecar's VmHWM from /proc at the end of the run.
`, strings.Join(grid, "; "), c.Reps)
}

// lossSlack is how much slower than the best static setting the default
// may be before gridLosses lists the cell: issue #13's bar is never slower
// than off, and not badly slower than a static depth.
const lossSlack = 1.10

// gridLosses lists the cells where the default row is slower than off, or
// more than lossSlack times the best static, with the round trips of both
// so that a reader can tell a loss from a swing of the machine.
func gridLosses(lats []w5Latency) string {
	var b strings.Builder
	for _, l := range lats {
		for pi, name := range l.Patterns {
			cells := l.Cells[pi]
			def, off, best := cellNamed(cells, "default"), cellNamed(cells, "off"), bestStatic(cells)
			vsOff, vsBest := ratio(def, off), ratio(def, best)
			if !(vsOff > 1) && !(vsBest > lossSlack) {
				continue
			}
			rt := func(c *w5Cell) string {
				if c == nil {
					return "–"
				}
				return fmtCount(c.med(func(s w5Sample) float64 { return s.RoundTrips }))
			}
			fmt.Fprintf(&b, "- %s at %d ms: %s off, %s best static; origin round trips %s (default), %s (off), %s (best static)\n",
				name, l.LatencyMS, fmtRatio(vsOff), fmtRatio(vsBest), rt(def), rt(off), rt(best))
		}
	}
	if b.Len() == 0 {
		return fmt.Sprintf("\nThe default was neither slower than off nor more than %s the best static in any cell.\n", fmtRatio(lossSlack))
	}
	return fmt.Sprintf("\nCells where the default was slower than off or more than %s the best static (wall-time medians; "+
		"slower than off with the same or fewer round trips points at CPU or the machine's load rather than at what was fetched):\n\n", fmtRatio(lossSlack)) + b.String()
}
