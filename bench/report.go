package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lookahead-dev/lookahead/bench/knafla"
	"github.com/lookahead-dev/lookahead/bench/plot"
)

// reporter collects the sections of the report as workloads finish.
type reporter struct {
	cfg       Config
	started   time.Time
	machine   machine
	bandwidth float64 // bytes/s of the proxied loopback link
	sections  []string
	tables    []string
	plots     []string
	raw       map[string]any
	rt        float64
}

func (r *reporter) emit(s string) {
	r.sections = append(r.sections, s)
	fmt.Fprintln(r.cfg.Stdout, s)
}

func (r *reporter) addTable(t string) string {
	r.tables = append(r.tables, t)
	return t
}

func (r *reporter) addRaw(k string, v any) {
	if r.raw == nil {
		r.raw = map[string]any{}
	}
	r.raw[k] = v
}

// plot writes an SVG into cfg.Out and returns markdown that shows it.
func (r *reporter) plot(name, alt string, svg []byte) string {
	if r.cfg.Out == "" {
		return ""
	}
	if err := os.MkdirAll(r.cfg.Out, 0o755); err != nil {
		return fmt.Sprintf("(plot %s not written: %v)\n", name, err)
	}
	path := filepath.Join(r.cfg.Out, name)
	if err := os.WriteFile(path, svg, 0o644); err != nil {
		return fmt.Sprintf("(plot %s not written: %v)\n", name, err)
	}
	r.plots = append(r.plots, path)
	link := path
	if r.cfg.Markdown != "" {
		if rel, err := filepath.Rel(filepath.Dir(r.cfg.Markdown), path); err == nil {
			link = filepath.ToSlash(rel)
		}
	}
	return fmt.Sprintf("![%s](%s)\n", alt, link)
}

func (r *reporter) w1(res []w1Latency) {
	c := r.cfg.W1
	per := 0
	var b strings.Builder
	fmt.Fprintf(&b, "## W1 — db4o task trees\n\n")
	for _, l := range res {
		for _, row := range l.Rows {
			for _, s := range row.Samples {
				per = s.Objects
			}
		}
	}
	fmt.Fprintf(&b, "%d root tasks, %d subtasks per task, %d levels (%d objects per graph), %d-byte payloads; "+
		"a query returns RESULT_SIZE = %d roots, then every object of their %d graphs (%d objects) is read with its own "+
		"call. %d quer%s per repetition, %d repetitions, each with a fresh sidecar (cold cache); every figure is the "+
		"median over repetitions, per query. Rows run interleaved (the order rotates every repetition).\n\n",
		c.Roots, c.Fanout, c.Levels, graphSize(c.Fanout, c.Levels), c.PayloadBytes, c.ResultSize, c.ResultSize, per,
		c.Queries, plural(c.Queries, "y", "ies"), c.Reps)
	b.WriteString(w1Notes(c, r.bandwidth))
	if len(c.LatenciesMS) > 1 && !c.SlowPeersAtAllLatencies {
		fmt.Fprintf(&b, "\nThe direct and redis cache-aside peers run at the first latency only: like no_prefetch they pay one origin round trip per object, and at %v ms each would add minutes.\n",
			c.LatenciesMS[1:])
	}
	for i, l := range res {
		fmt.Fprintf(&b, "\n### Latency %d ms one way — measured round trip %s\n\n", l.LatencyMS, fmtMS(l.RTT))
		fmt.Fprintf(&b, "Lower bound: %d encoded bytes per query at %s/s, plus one round trip (rows that may use Expand) or %d (BatchGet only, one per level).\n\n",
			l.Wire, fmtBytes(r.bandwidth), c.Levels)
		b.WriteString(r.addTable(l.table(c.Levels, r.bandwidth)))
		if i == 0 {
			for _, row := range l.Rows {
				if row.Row.Name == "no_prefetch" && len(row.Samples) > 0 {
					r.rt = row.med(func(s w1Sample) float64 { return s.RoundTrips })
				}
			}
		}
	}
	if len(res) > 0 {
		var bars []plot.Bar
		for _, row := range res[0].Rows {
			if len(row.Samples) == 0 {
				continue
			}
			bars = append(bars, plot.Bar{Label: row.Row.Name, Parts: []float64{row.query().Seconds(), row.walk().Seconds()}})
		}
		b.WriteString("\n" + r.plot("w1_time.svg", "W1 time per setting", plot.BarChart{
			Title:  fmt.Sprintf("W1: time per query (%d graphs), %s round trip — log scale", c.ResultSize, fmtMS(res[0].RTT)),
			XLabel: "seconds per query (query + walk)", Parts: []string{"query", "walk"}, Bars: bars, Log: true,
		}.SVG()))
	}
	if len(res) > 1 {
		var series []plot.Series
		for _, row := range res[0].Rows {
			if row.Row.NA != "" || row.Row.Name == "no_prefetch" {
				continue
			}
			s := plot.Series{Name: row.Row.Name}
			for _, l := range res {
				s.X = append(s.X, l.RTT.Seconds()*1e3)
				s.Y = append(s.Y, w1Speedup(l, row.Row.Name))
			}
			series = append(series, s)
		}
		b.WriteString("\n" + r.plot("w1_speedup.svg", "W1 speed-up vs latency", plot.LineChart{
			Title: "W1: speed-up over no_prefetch vs round trip", XLabel: "measured origin round trip (ms)",
			YLabel: "speed-up (×)", Series: series, RefY: 1, RefLabel: "no_prefetch",
		}.SVG()))
	}
	r.addRaw("w1", res)
	r.emit(b.String())
}

func w1Speedup(l w1Latency, name string) float64 {
	var base, t time.Duration
	for _, row := range l.Rows {
		if len(row.Samples) == 0 {
			continue
		}
		switch row.Row.Name {
		case "no_prefetch":
			base = row.total()
		case name:
			t = row.total()
		}
	}
	if base == 0 || t == 0 {
		return math.NaN()
	}
	return float64(base) / float64(t)
}

func w1Notes(c W1Config, bw float64) string {
	levels := c.Levels - 1
	return fmt.Sprintf(`How each row runs (bench/w1.go):

- **no_prefetch**: sidecar `+"`--prefetch-mode off`"+`; the query is one BatchGet of the roots, then one Get per object.
- **single_prefetch**: sidecar `+"`--prefetch-mode static --prefetch-depth %d --prefetch-max-objects %d`"+` (one root's graph); the query asks for its roots one at a time with a Get each, and each root's walk follows its Get, so each Get prefetches its own graph. Query time is the sum of those Gets.
- **full_prefetch**: the same sidecar; the query is one BatchGet of all roots with the hint depth %d, max_objects %d, enough to prefetch all %d graphs at once.
- **full_prefetch + near cache**: full_prefetch read through a client with a near cache (`+"`lookahead.WithNearCache`"+`, 256 MiB), which the sidecar fills with what its speculation brings; the walk's reads of pushed objects are answered in the application's process.
- **full_prefetch + near cache (warm sidecar)**: the same, after another application (a client without a near cache, untimed) read the same graphs through the same sidecar: its cache holds them all and no origin call is needed, so what fills the near cache is the sidecar's pushes of what it holds.
- **full_prefetch + near cache (two applications)**: two applications, each through its own near-cache client, read their own query's graphs at the same time through one sidecar (the second's roots half the trees further on): the worker processes of one service. Its figures are for both together: the query time until the later one's roots are answered, the walk until the later one's walk ends, CPU per object over both applications' objects; its lower bound is one application's.
- **--no-expand** rows: the same with `+"`--no-expand`"+`, so prefetching goes level by level with BatchGet instead of one server-side Expand. It only matters where the sidecar prefetches: no_prefetch makes no expansions.
- **adaptive**: `+"`--prefetch-mode adaptive`"+` with no other setting, run only if bin/sidecar accepts it (checked at start).
- **extra: GetGraph** (not in BENCH.md, added to show how close the sidecar's own graph API comes to the lower bound): sidecar `+"`--prefetch-mode off`"+`, one streamed GetGraph of the query's roots as deep as the trees; its query time runs until the roots arrive, its walk time to the end of the stream.
- **peer: direct**: the client calls the origin itself (through the same proxy), one BatchGet of one id per object.
- **peer: batched client**: no sidecar; the client batches each level of each graph into one origin BatchGet, as a DataLoader does (%d per graph).
- **peer: redis cache-aside** (cold, redis flushed before every repetition): MGET for the roots, then per object a redis GET, on the miss an origin BatchGet of that id and a redis SET.
- **peer: origin Expand**: no sidecar; the client asks the origin itself for the query's graphs, one Expand of its roots as deep as the trees: what extra: GetGraph costs without the sidecar in between.

CPU / object: the CPU time the sidecar and origin processes used during the query (the sum over their threads of /proc/PID/task/TID/schedstat, in nanoseconds), over the objects the query read; "–" for a process not in the row.

Origin round trips of sidecar rows come from the sidecar's lookahead_origin_round_trips_total (all rpcs), bytes from lookahead_origin_fetched_bytes_total (graph.Object.Size: payload, ids and a fixed overhead); prefetch issued / used / wasted from lookahead_prefetch_{issued,used,wasted}_total (and, for near-cache rows, the objects pushed to near caches, lookahead_near_events_total{kind="push"}), demands joined in flight (a Get that waited for a fetch already under way instead of asking the origin again) from lookahead_inflight_joins_total; "(N Expand)" counts the round trips that were Expand calls. Peers count their own calls and the same Size of what they received. Prefetched objects still unused in the prefetch tier at the end are neither used nor wasted. Every path to the origin goes through the same toxiproxy proxy; redis is local (not behind the proxy), as a cache next to the application is.

The lower bound of a cold walk is the fewest origin round trips the API allows times the measured round trip, plus the encoded bytes of the query's objects over the proxied loopback bandwidth (measured: %s/s, 64 MiB through a toxiproxy proxy without toxics, median of 3): one round trip for rows that may use Expand (a whole subgraph per request), %d (one BatchGet per level, all graphs together) for rows that cannot. It counts origin round trips only; an object-by-object walk also pays one application→sidecar call per object (see W3 for that cost).
`, levels, graphSize(c.Fanout, c.Levels)-1, levels, c.ResultSize*(graphSize(c.Fanout, c.Levels)-1), c.ResultSize,
		c.Levels-1, fmtBytes(bw), c.Levels)
}

func graphSize(fanout, levels int) int {
	n, w := 0, 1
	for l := 0; l < levels; l++ {
		n += w
		w *= fanout
	}
	return n
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func (r *reporter) w2(res *w2Result) {
	c := res.Cfg
	var b strings.Builder
	fmt.Fprintf(&b, "## W2 — Knafla navigation\n\n")
	fmt.Fprintf(&b, "Latency %d ms one way — measured round trip %s. %d pages of %d objects (%d-byte payloads) loaded with `bin/origin --load` from NDJSON; "+
		"each run visits %d pages object by object, one Get per object, through a fresh sidecar. Prefetching sidecars run "+
		"`--prefetch-mode static --prefetch-depth %d --prefetch-max-objects %d --prefetch-fields %s --prefetch-workers N`; the default row runs the sidecar with no prefetch flag (adaptive); demand fetching is `--prefetch-mode off`. "+
		"Saving = 1 − elapsed(prefetch) ÷ elapsed(demand), medians of %d repetitions of the same navigation, configurations interleaved.\n\n",
		c.LatencyMS, fmtMS(res.RTT), c.Pages, knafla.PageObjects, c.PayloadBytes, c.Visit, c.Depth, c.MaxObjects,
		strings.Join(knafla.Fields, ","), c.Reps)
	b.WriteString(w2Notes)
	summary, stall, detail := res.tables()
	fmt.Fprintf(&b, "\n### Saving over demand fetching\n\n%s", r.addTable(summary))
	fmt.Fprintf(&b, "\n### Share of the demand stall hidden\n\n"+
		"Stall = demand fetching's elapsed time less the think time it measured; hidden = (elapsed(demand) − elapsed(row)) ÷ stall, same run. "+
		"The near-cache row reads through a Go client with `lookahead.WithNearCache` (%d MiB) from the same prefetching sidecar.\n\n%s",
		nearBytes>>20, r.addTable(stall))
	for _, d := range detail {
		b.WriteString("\n" + r.addTable(d))
	}
	fmt.Fprintf(&b, "\n### The near-cache row's reads\n\n%s%s", w2NearReadsNote, r.addTable(res.nearReadsTable()))
	var series []plot.Series
	var labels []string
	for _, t := range c.Think {
		labels = append(labels, fmtThink(t))
	}
	for ci, cond := range w2Conditions {
		for _, w := range res.rowWorkers() {
			s := plot.Series{Name: cond.Name + ", " + w2Label(w)}
			for _, t := range c.Think {
				s.Y = append(s.Y, 100*res.saving(t, ci, w))
			}
			series = append(series, s)
		}
	}
	b.WriteString("\n" + r.plot("w2_saving.svg", "W2 saving vs think time", plot.LineChart{
		Title: fmt.Sprintf("W2: saving over demand fetching, %s round trip", fmtMS(res.RTT)), XLabel: "think time per object",
		YLabel: "saving (%)", XLabels: labels, Series: series, RefY: 0, RefLabel: "demand fetching",
	}.SVG()))
	r.addRaw("w2", res)
	r.emit(b.String())
}

const w2Notes = `Modelling (bench/knafla): a page is a binary tree of 112 objects in which every path from the page's entry has 16 objects: 15 objects (of which those at depths 3, 5, 7 and 11 are Branch objects with refs "left" and "right") and then an Out-Ref object, so each page has 16 Out-Ref objects. Every Out-Ref object refers in fields "out1", "out2", "out3" to the entries of three other pages, chosen at random. The application starts at a page's entry, follows "next", picks one child of each Branch object at random, and at the Out-Ref object queues the pages of the first k of its three refs (first in, first out, each page once) — k = 3 in the Correct condition, 2 in One incorrect, 1 in Two incorrect — until it has visited the set number of pages; if it runs out of queued pages it restarts at a random unvisited page. It spends the think time after every object in a busy loop, as computation on the object. The sidecar's prefetch follows every field listed in --prefetch-fields, all three out-refs included, so in One incorrect one prefetched out-ref in three is never used, in Two incorrect two in three; and at every Branch object one of the two prefetched subtrees goes unused in all conditions. A busy loop rather than time.Sleep, because sleeps of 50 µs to 1 ms took about 1.1 ms on the machine this was written on, less when other goroutines of the process were active, so a sleeping think time would have depended on the configuration under test; the table gives the think time measured per object. The price: on a 2-core machine the thinking client keeps one core busy, and the sidecar, origin and proxy share the other.
`

func (r *reporter) w3(res *w3Result) {
	c := res.Cfg
	var b strings.Builder
	fmt.Fprintf(&b, "## W3 — the hit path\n\n")
	fmt.Fprintf(&b, "%d cached objects with %d-byte payloads; a Go load generator calls Get on random ids from N goroutines "+
		"over one gRPC ClientConn for %v per point (after an unrecorded warm-up of a tenth of that), %d repetitions, the servers interleaved "+
		"(order rotated every repetition); medians. Ratios are taken within each repetition, then their median. "+
		"Sidecar: `--prefetch-mode %s`, objects loaded and re-read until every one is a hit; its hit ratio during the measurements "+
		"(lookahead_cache_hits_total ÷ hits + misses): %s; the rows \"sidecar\" dial its TCP loopback listener, \"sidecar, unix socket\" the same process "+
		"through its --unix-socket, as an application in the same pod can through a shared volume. gRPC floor: a bare grpc-go server answering the same Get method "+
		"(lookahead.v1.SidecarService) from a Go map of the same objects (bench/floor, a separate process). redis: redis-server GET of the "+
		"same objects proto-encoded, go-redis with a pool as large as the concurrency (a redis connection carries one request at a time), "+
		"values decoded. The origin (round trip %s) is not on this path.\n\n",
		c.Objects, w3Payload, c.Duration, c.Reps, c.prefetchMode(), fmtPct(res.HitRatio), fmtMS(res.RTT))
	hit, walk := res.tables()
	b.WriteString(r.addTable(hit))
	fmt.Fprintf(&b, "\nWarm walk of one %d-object graph (%d levels), %d walks each, interleaved, after two unrecorded walks:\n\n",
		graphSize(5, c.GraphLevels), c.GraphLevels, c.GraphWalks)
	b.WriteString(r.addTable(walk))
	r.addRaw("w3", res)
	r.emit(b.String())
}

func (r *reporter) w4(res *w4Result) {
	c := res.Cfg
	var b strings.Builder
	fmt.Fprintf(&b, "## W4 — memory under pressure\n\n")
	fmt.Fprintf(&b, "Sidecar `--cache-bytes %d --prefetch-bytes %d` (configured %s), `--prefetch-mode static --prefetch-depth %d --prefetch-max-objects %d`. "+
		"Task trees (fan-out 5, %d levels, %d objects each) of %d-byte objects; each query is one BatchGet of %d roots with a hint as deep as the trees "+
		"(all %d graphs prefetched at once, about %s, more than the whole cache), then every object is read with its own Get. "+
		"Latency %d ms one way, measured round trip %s. Peak RSS is the sidecar's VmHWM from /proc; RSS, Go heap and cache bytes are also "+
		"sampled from its /metrics every 100 ms. The live Go heap is read at the end of each run, right after a forced collection "+
		"(the sidecar runs with --pprof; fetching /debug/pprof/heap?gc=1 collects first): what the sidecar actually holds. The peak heap in use also "+
		"counts garbage that Go's collector lets accumulate between collections (GOGC=100: the next collection starts when the heap has grown by "+
		"the live heap again), and RSS follows that peak; GOMEMLIMIT bounds it, and the Kubernetes manifests set it. "+
		"%d repetitions, each with a fresh sidecar, medians.\n\n",
		c.CacheBytes, c.PrefetchBytes, fmtBytes(float64(c.configured())), c.Levels-1, graphSize(5, c.Levels)-1,
		c.Levels, graphSize(5, c.Levels), c.PayloadBytes, c.ResultSize, c.ResultSize,
		fmtBytes(float64(res.Points[0].Bytes)/float64(res.Points[0].Roots)*float64(c.ResultSize)),
		c.LatencyMS, fmtMS(res.RTT), c.Reps)
	b.WriteString(r.addTable(res.table()))
	mib := func(v float64) float64 { return v / (1 << 20) }
	var xs []float64
	peak, sampled, heap := plot.Series{Name: "peak RSS (VmHWM)"}, plot.Series{Name: "peak RSS (sampled)"}, plot.Series{Name: "peak Go heap in use"}
	live := plot.Series{Name: "live Go heap at the end"}
	for _, p := range res.Points {
		xs = append(xs, mib(float64(p.Bytes)))
		peak.Y = append(peak.Y, mib(p.med(func(s w4Sample) float64 { return float64(s.PeakRSS) })))
		sampled.Y = append(sampled.Y, mib(p.med(func(s w4Sample) float64 { return float64(s.SampledRSS) })))
		heap.Y = append(heap.Y, mib(p.med(func(s w4Sample) float64 { return float64(s.PeakHeap) })))
		live.Y = append(live.Y, mib(p.med(func(s w4Sample) float64 { return float64(s.LiveHeap) })))
	}
	peak.X, sampled.X, heap.X, live.X = xs, xs, xs, xs
	series := []plot.Series{peak, sampled, heap, live}
	b.WriteString("\n" + r.plot("w4_rss.svg", "W4 RSS vs working set", plot.LineChart{
		Title: "W4: sidecar memory vs working set", XLabel: "working set (MiB of objects walked)", YLabel: "MiB",
		Series: series, RefY: mib(float64(c.configured())), RefLabel: "configured cache + prefetch bytes",
	}.SVG()))
	r.addRaw("w4", res)
	r.emit(b.String())
}

// finish writes the report and the raw results.
func (r *reporter) finish() (*Report, error) {
	m := r.machine
	var b strings.Builder
	b.WriteString("# lookahead benchmarks\n\n")
	fmt.Fprintf(&b, "Generated by `%s` (mode **%s**) on %s, in %s. Do not edit: rerun the command (`make bench` for full sizes, `make bench-quick` for the reduced ones).\n\n",
		r.cfg.Command, r.cfg.Mode, r.started.UTC().Format("2006-01-02 15:04 MST"), time.Since(r.started).Round(time.Second))
	if r.cfg.Mode != "full" {
		fmt.Fprintf(&b, "**These are %s-mode figures: the workloads at reduced sizes.** Run `make bench` for BENCH.md's sizes.\n\n", r.cfg.Mode)
	}
	fmt.Fprintf(&b, "Machine: %d cores, %s; %s; Linux %s. The machine is shared: absolute times are noisy, so every "+
		"comparison is a ratio of medians measured in the same run, configurations interleaved.\n\n", m.Cores, m.CPU, m.GoVersion, m.Kernel)
	fmt.Fprintf(&b, "Latency: an in-process toxiproxy (github.com/Shopify/toxiproxy/v2 v2.12.0, used as a library) sits between "+
		"every client of the origin (sidecars and peers) and the origin, with a latency toxic on the downstream direction; "+
		"the origin's own --latency flag is not used. Toxiproxy takes whole milliseconds and overshoots, so each table gives "+
		"the round trip actually measured: the median of 50 gRPC health Checks to the origin through the proxy. "+
		"Proxied loopback bandwidth: %s/s.\n\n", fmtBytes(r.bandwidth))
	for _, s := range r.sections {
		b.WriteString(s + "\n")
	}
	b.WriteString("## Go micro-benchmarks\n\nNot run by this program (they measure CPU, not the system): the planner step " +
		"(`go test -run '^$' -bench PlanStep ./internal/prefetch`, objects, fetch ids and round trips per plan, ns per object) and " +
		"object encoding (`go test -run '^$' -bench . ./internal/graph/graphpb`, a task and a 1 KiB object, wire bytes per object) and " +
		"the reference origin's CPU per object on a W1 query (`go test -run '^$' -bench . ./internal/originserver`, a BatchGet per level " +
		"and one Expand of 5 task trees, replies encoded as gRPC sends them, cpu-µs/object counting the whole process).\n")
	rep := &Report{Markdown: b.String(), Tables: r.tables, Plots: r.plots, NoPrefetchRoundTrips: r.rt}
	if r.cfg.Markdown != "" {
		if err := os.WriteFile(r.cfg.Markdown, []byte(rep.Markdown), 0o644); err != nil {
			return rep, err
		}
	}
	if r.cfg.Out != "" {
		// The raw figures are a convenience: failing to write them does not
		// fail the run.
		raw, err := json.MarshalIndent(r.raw, "", " ")
		if err == nil {
			if err = os.MkdirAll(r.cfg.Out, 0o755); err == nil {
				err = os.WriteFile(filepath.Join(r.cfg.Out, "results.json"), raw, 0o644)
			}
		}
		if err != nil {
			fmt.Fprintln(r.cfg.Progress, "raw results not written:", err)
		}
	}
	return rep, nil
}
