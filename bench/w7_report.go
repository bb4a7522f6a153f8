package bench

import (
	"fmt"
	"strings"
)

func (r *reporter) w7(res *w7Result) {
	c := res.Cfg
	var b strings.Builder
	fmt.Fprintf(&b, "## W7 — shapes where speculation can lose\n\n")
	fmt.Fprintf(&b, "One origin (`bin/origin --load`, the NDJSON bench/w7.go writes) holds %d objects of six shapes, read in seven patterns through the "+
		"sidecar's gRPC API one Get per object, as an application reads; payloads are %d bytes unless stated:\n\n", res.Objects, c.PayloadBytes)
	fmt.Fprintf(&b, "- **random points**: %d reads of objects drawn uniformly from a random graph of %d objects with 4 refs each on average; "+
		"no read follows a ref, so every prefetch is waste.\n", c.PointReads, c.Points)
	fmt.Fprintf(&b, "- **chain**: a linked list of %d objects read from its head in order; each read names the next.\n", c.ChainLen)
	fmt.Fprintf(&b, "- **diamonds**: a layered DAG (graph.Diamonds) of a root and %d layers of %d objects, each referring to %d of the layer "+
		"below: heavy sharing; read depth first from the root, each object once (%d objects).\n", c.DAGLayers, c.DAGWidth, c.DAGRefs, 1+c.DAGLayers*c.DAGWidth)
	fmt.Fprintf(&b, "- **star**: one hub referring to %d leaves; %d visits, each reading the hub and %d leaves drawn at random.\n", c.StarLeaves, c.StarVisits, c.StarReads)
	fmt.Fprintf(&b, "- **large payloads**: %d trees of %d levels, %d children an object, %s payloads; %d walks from a random root down one random "+
		"path to a leaf, so each speculated sibling costs its payload.\n", c.BigTrees, c.BigLevels, c.BigFanout, fmtBytes(float64(c.BigPayload)), c.BigVisits)
	fmt.Fprintf(&b, "- **reads and writes**: %d trees of %d levels, %d children an object; %d breadth-first reads of a whole random tree with a Put "+
		"(through the sidecar) of an object already read after every %d reads, each dropping the sidecar's copies.\n", c.WriteTrees, c.WriteLevels,
		c.WriteFanout, c.WriteVisits, c.WriteEvery)
	fmt.Fprintf(&b, "- **four at once**: random points, chain, diamonds and star read concurrently, one goroutine each, over one connection: "+
		"one client reading several unrelated graphs.\n\n")
	b.WriteString(w7Notes(c))
	r.emitGrid(&b, "W7", res.Latencies, res)
}

func w7Notes(c W7Config) string {
	var grid []string
	for _, s := range c.Statics {
		grid = append(grid, fmt.Sprintf("depth %d max %d", s.Depth, s.MaxObjects))
	}
	return fmt.Sprintf(`Rows: **off** is `+"`--prefetch-mode off`"+`; **default** the sidecar with no prefetch flag (adaptive); **static defaults** `+"`--prefetch-mode static`"+` (depth 3, max 1000); **best static** the fastest point, per pattern and latency, of a grid of `+"`--prefetch-mode static --prefetch-depth D --prefetch-max-objects M`"+` settings (%s; max 0 is no cap; every point runs like the other rows and is listed below it). Every run starts a fresh sidecar (cold cache); %d repetitions, rows interleaved within each (the order rotates), the same reads for every row of a repetition, other random draws in the next; figures are medians, ratios taken between medians of this run. Origin round trips and objects fetched come from the sidecar's lookahead_origin_round_trips_total and lookahead_origin_objects_fetched_total (demand and prefetch); objects used are the distinct objects the application read; CPU is the sidecar's CPU time over the run, all threads (at 0 ms what speculation costs in CPU is what it can lose); peak RSS is the sidecar's VmHWM.
`, strings.Join(grid, "; "), c.Reps)
}
