package bench

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
)

// W7Config sizes W7: graph shapes and access patterns a user might bring,
// each chosen because some prefetch setting loses on it.
type W7Config struct {
	LatenciesMS  []int // one-way latency of the proxy, one table each
	Reps         int
	PayloadBytes int // of every object but the large ones
	// Random points: PointReads reads of objects drawn uniformly from a
	// random graph of Points objects with 4 refs each on average.
	Points, PointReads int
	ChainLen           int // chain: a linked list read from its head
	// Diamonds: a layered DAG (graph.Diamonds) read depth first from its
	// root, each object once.
	DAGLayers, DAGWidth, DAGRefs int
	// Star: StarVisits visits of a hub of StarLeaves refs, each reading the
	// hub and StarReads leaves drawn at random.
	StarLeaves, StarVisits, StarReads int
	// Large payloads: BigVisits walks from the root of one of BigTrees trees
	// (BigFanout children, BigLevels levels, BigPayload bytes an object) down
	// one random path to a leaf.
	BigTrees, BigFanout, BigLevels, BigPayload, BigVisits int
	// Reads and writes: WriteVisits breadth-first reads of one of WriteTrees
	// trees (WriteFanout, WriteLevels), with a Put of an object already read
	// after every WriteEvery reads.
	WriteTrees, WriteFanout, WriteLevels, WriteVisits, WriteEvery int
	// Statics is the grid of static settings searched for the best static
	// row.
	Statics []W5Static
	// Patterns names the patterns to run, as in the report; empty runs all.
	Patterns []string
}

// w7Grid is the static settings W7 searches, most promising first: quick
// mode runs the first two (a shallow capped one for the shapes where
// speculation wastes, a deep one for chains).
var w7Grid = []W5Static{{Depth: 1, MaxObjects: 20}, {Depth: 8, MaxObjects: 100}, {Depth: 2, MaxObjects: 100}, {Depth: 1, MaxObjects: 0}}

// w7Op is one call of the application: a Get of ID, or a Put of it.
type w7Op struct {
	ID    string
	Write bool
}

// w7Pattern is an access pattern: the ops of each client, which run
// concurrently on one connection to the sidecar.
type w7Pattern struct {
	Name    string
	clients func(rng *rand.Rand) [][]w7Op
}

type w7Result struct {
	Cfg       W7Config
	Objects   int
	Latencies []w5Latency
}

type w7 struct {
	e    *env
	cfg  W7Config
	byID map[string]*graph.Object
}

// Each shape's ids start with its own prefix, so that the shapes share one
// origin (random points keep RandomGraph's "node-").
const (
	w7Chain, w7DAG, w7Star = "chain", "dag", "star"
	w7Big, w7Write         = "big/", "rw/"
)

func runW7(ctx context.Context, e *env, cfg W7Config) (*w7Result, error) {
	w := &w7{e: e, cfg: cfg, byID: map[string]*graph.Object{}}
	patterns, err := w.selected()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(e.tmp, "w7.ndjson")
	if err := w.generate(path); err != nil {
		return nil, err
	}
	res := &w7Result{Cfg: cfg, Objects: len(w.byID)}
	e.progress("w7: starting origin with %d objects of six shapes", res.Objects)
	o, err := e.startOrigin(ctx, "w7", "--load", path)
	if err != nil {
		return nil, err
	}
	defer o.stop()
	rows := gridRows([]w5Row{
		{Name: "off", Args: []string{"--prefetch-mode", "off"}},
		{Name: "default", Args: []string{}}, // adaptive
		{Name: "static defaults", Args: []string{"--prefetch-mode", "static"}},
	}, cfg.Statics, e.adaptive)
	g := grid{name: "w7", origin: o, latencies: cfg.LatenciesMS, reps: cfg.Reps, rows: rows,
		prepare: func(rep, pi int) func(context.Context, w5Row) (w5Sample, error) {
			clients := patterns[pi].clients(rand.New(rand.NewPCG(uint64(rep), uint64(pi))))
			return func(ctx context.Context, r w5Row) (w5Sample, error) {
				return e.measureSidecar(ctx, o.Addr(), r.Args, func(ctx context.Context, sc *sidecar) (int, error) {
					return w.perform(ctx, sc, clients)
				})
			}
		}}
	for _, p := range patterns {
		g.patterns = append(g.patterns, p.Name)
	}
	if res.Latencies, err = e.runGrid(ctx, g); err != nil {
		return nil, err
	}
	return res, nil
}

// generate builds every shape into w.byID and writes them to path as the
// NDJSON that bin/origin --load reads.
func (w *w7) generate(path string) error {
	c := w.cfg
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriter(f)
	emit := func(o *graph.Object) error {
		w.byID[o.ID] = o
		return graph.EncodeNDJSON(bw, o)
	}
	for _, gen := range []func(graph.EmitFunc) error{
		graph.RandomGraph{N: c.Points, RefsPerNode: 4, PayloadBytes: c.PayloadBytes, Seed: 1}.Generate,
		graph.Chain{Prefix: w7Chain, N: c.ChainLen, PayloadBytes: c.PayloadBytes, Seed: 1}.Generate,
		graph.Diamonds{Prefix: w7DAG, Layers: c.DAGLayers, Width: c.DAGWidth, Refs: c.DAGRefs, PayloadBytes: c.PayloadBytes, Seed: 1}.Generate,
		graph.Star{Prefix: w7Star, Leaves: c.StarLeaves, PayloadBytes: c.PayloadBytes, Seed: 1}.Generate,
		prefixed(w7Big, graph.TaskTrees{Roots: c.BigTrees, Fanout: c.BigFanout, Levels: c.BigLevels, PayloadBytes: c.BigPayload, Seed: 1}.Generate),
		prefixed(w7Write, graph.TaskTrees{Roots: c.WriteTrees, Fanout: c.WriteFanout, Levels: c.WriteLevels, PayloadBytes: c.PayloadBytes, Seed: 2}.Generate),
	} {
		if err := gen(emit); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// prefixed puts prefix before the ids of everything gen emits, and of their
// refs, so that two instances of one generator can share an origin.
func prefixed(prefix string, gen func(graph.EmitFunc) error) func(graph.EmitFunc) error {
	return func(emit graph.EmitFunc) error {
		return gen(func(o *graph.Object) error {
			o.ID = prefix + o.ID
			for i := range o.Refs {
				o.Refs[i].ID = prefix + o.Refs[i].ID
			}
			return emit(o)
		})
	}
}

// perform runs each client's ops on its own goroutine, all on sc's one
// connection, and returns the number of distinct objects read.
func (w *w7) perform(ctx context.Context, sc *sidecar, clients [][]w7Op) (int, error) {
	g, ctx := errgroup.WithContext(ctx)
	for _, ops := range clients {
		g.Go(func() error {
			for _, op := range ops {
				if err := w.do(ctx, sc, op); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	return distinctReads(clients), nil
}

func (w *w7) do(ctx context.Context, sc *sidecar, op w7Op) error {
	if op.Write {
		// The same object again: the origin gives it a new version, and
		// the sidecar drops every copy it holds.
		if _, err := sc.c.Put(ctx, graphpb.ToProto(w.byID[op.ID])); err != nil {
			return fmt.Errorf("put %s: %w", op.ID, err)
		}
		return nil
	}
	if _, _, err := sc.c.Get(ctx, op.ID, nil); err != nil {
		return fmt.Errorf("get %s: %w", op.ID, err)
	}
	return nil
}

func distinctReads(clients [][]w7Op) int {
	seen := map[string]bool{}
	for _, ops := range clients {
		for _, op := range ops {
			if !op.Write {
				seen[op.ID] = true
			}
		}
	}
	return len(seen)
}

// reads is ids as Get ops.
func reads(ids ...string) []w7Op {
	ops := make([]w7Op, len(ids))
	for i, id := range ids {
		ops[i] = w7Op{ID: id}
	}
	return ops
}

// depthFirst lists the objects reachable from root in depth-first preorder,
// refs in their order, each once.
func depthFirst(byID map[string]*graph.Object, root string) []string {
	var out []string
	seen := map[string]bool{}
	var visit func(id string)
	visit = func(id string) {
		if seen[id] || byID[id] == nil {
			return
		}
		seen[id] = true
		out = append(out, id)
		for _, r := range byID[id].Refs {
			visit(r.ID)
		}
	}
	visit(root)
	return out
}

// breadthFirst lists the objects reachable from root level by level, each
// once.
func breadthFirst(byID map[string]*graph.Object, root string) []string {
	out := []string{root}
	seen := map[string]bool{root: true}
	for i := 0; i < len(out); i++ {
		for _, r := range byID[out[i]].Refs {
			if !seen[r.ID] && byID[r.ID] != nil {
				seen[r.ID] = true
				out = append(out, r.ID)
			}
		}
	}
	return out
}

// randomPath lists root and one random ref of each object below it, down to
// an object with none.
func randomPath(rng *rand.Rand, byID map[string]*graph.Object, root string) []string {
	path := []string{root}
	for o := byID[root]; o != nil && len(o.Refs) > 0; {
		next := o.Refs[rng.IntN(len(o.Refs))].ID
		path = append(path, next)
		o = byID[next]
	}
	return path
}

// withWrites puts a write of a random object already read after every
// every reads of ids.
func withWrites(rng *rand.Rand, ids []string, every int) []w7Op {
	var ops []w7Op
	for i, id := range ids {
		ops = append(ops, w7Op{ID: id})
		if every > 0 && (i+1)%every == 0 {
			ops = append(ops, w7Op{ID: ids[rng.IntN(i+1)], Write: true})
		}
	}
	return ops
}

// selected is the patterns cfg.Patterns names, in their usual order.
func (w *w7) selected() ([]w7Pattern, error) {
	return selectNamed(w.patterns(), w.cfg.Patterns, func(p w7Pattern) string { return p.Name })
}

// selectNamed returns the items of all that names names, in all's order,
// all of them when names is empty; a name of none of them is an error that
// lists theirs.
func selectNamed[T any](all []T, names []string, name func(T) string) ([]T, error) {
	if len(names) == 0 {
		return all, nil
	}
	out := slices.DeleteFunc(slices.Clone(all), func(x T) bool { return !slices.Contains(names, name(x)) })
	if len(out) != len(names) {
		known := make([]string, 0, len(all))
		for _, x := range all {
			known = append(known, name(x))
		}
		return nil, fmt.Errorf("patterns %q: want some of %q", names, known)
	}
	return out, nil
}

func (w *w7) patterns() []w7Pattern {
	c := w.cfg
	points := func(rng *rand.Rand) []w7Op {
		var ops []w7Op
		for range c.PointReads {
			ops = append(ops, w7Op{ID: graph.RandomGraph{}.NodeID(rng.IntN(c.Points))})
		}
		return ops
	}
	chain := func(*rand.Rand) []w7Op { return reads(depthFirst(w.byID, graph.ShapeID(w7Chain, 0))...) }
	dag := func(*rand.Rand) []w7Op { return reads(depthFirst(w.byID, graph.ShapeID(w7DAG, 0))...) }
	star := func(rng *rand.Rand) []w7Op {
		var ops []w7Op
		for range c.StarVisits {
			ops = append(ops, w7Op{ID: graph.ShapeID(w7Star, 0)})
			for _, i := range rng.Perm(c.StarLeaves)[:c.StarReads] {
				ops = append(ops, w7Op{ID: graph.ShapeID(w7Star, i+1)})
			}
		}
		return ops
	}
	big := func(rng *rand.Rand) []w7Op {
		var ops []w7Op
		for range c.BigVisits {
			root := w7Big + graph.TaskTrees{}.RootID(rng.IntN(c.BigTrees))
			ops = append(ops, reads(randomPath(rng, w.byID, root)...)...)
		}
		return ops
	}
	rw := func(rng *rand.Rand) []w7Op {
		var ops []w7Op
		for range c.WriteVisits {
			root := w7Write + graph.TaskTrees{}.RootID(rng.IntN(c.WriteTrees))
			ops = append(ops, withWrites(rng, breadthFirst(w.byID, root), c.WriteEvery)...)
		}
		return ops
	}
	one := func(f func(*rand.Rand) []w7Op) func(*rand.Rand) [][]w7Op {
		return func(rng *rand.Rand) [][]w7Op { return [][]w7Op{f(rng)} }
	}
	return []w7Pattern{
		{Name: "random points", clients: one(points)},
		{Name: "chain", clients: one(chain)},
		{Name: "diamonds", clients: one(dag)},
		{Name: "star", clients: one(star)},
		{Name: "large payloads", clients: one(big)},
		{Name: "reads and writes", clients: one(rw)},
		{Name: "four at once", clients: func(rng *rand.Rand) [][]w7Op {
			return [][]w7Op{points(rng), chain(rng), dag(rng), star(rng)}
		}},
	}
}
