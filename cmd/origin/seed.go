package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/store"
)

// maxSeedObjects bounds a generated dataset, so that a typo in a flag does
// not fill the disk.
const maxSeedObjects = 1_000_000_000

type taskOptions struct {
	roots, fanout, levels, payloadBytes int
	seed                                uint64
}

func (t taskOptions) gen() graph.TaskTrees {
	return graph.TaskTrees{Roots: t.roots, Fanout: t.fanout, Levels: t.levels, PayloadBytes: t.payloadBytes, Seed: t.seed}
}

func (t taskOptions) validate() error {
	var errs []error
	if t.roots < 1 {
		errs = append(errs, fmt.Errorf("-task-roots %d: want at least 1", t.roots))
	}
	if t.fanout < 1 {
		errs = append(errs, fmt.Errorf("-task-fanout %d: want at least 1", t.fanout))
	}
	if t.levels < 1 {
		errs = append(errs, fmt.Errorf("-task-levels %d: want at least 1", t.levels))
	}
	if t.payloadBytes < 0 {
		errs = append(errs, fmt.Errorf("-payload-bytes %d is negative", t.payloadBytes))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// Count level by level, stopping before the product can overflow.
	total, width := 0, 1
	for l := 0; l < t.levels && total <= maxSeedObjects; l++ {
		total += width
		if width > maxSeedObjects/t.fanout {
			width = maxSeedObjects + 1
		} else {
			width *= t.fanout
		}
	}
	if total > maxSeedObjects/t.roots {
		return fmt.Errorf("-task-roots %d, -task-fanout %d, -task-levels %d: more than %d objects", t.roots, t.fanout, t.levels, maxSeedObjects)
	}
	return nil
}

type randomOptions struct {
	nodes, refs, payloadBytes int
	dangling                  float64
	seed                      uint64
}

func (r randomOptions) gen() graph.RandomGraph {
	return graph.RandomGraph{N: r.nodes, RefsPerNode: r.refs, DanglingRate: r.dangling, PayloadBytes: r.payloadBytes, Seed: r.seed}
}

func (r randomOptions) validate() error {
	var errs []error
	if r.nodes < 1 || r.nodes > maxSeedObjects {
		errs = append(errs, fmt.Errorf("-random-nodes %d: want 1 to %d", r.nodes, maxSeedObjects))
	}
	if r.refs < 0 {
		errs = append(errs, fmt.Errorf("-random-refs %d is negative", r.refs))
	}
	if !(r.dangling >= 0 && r.dangling <= 1) {
		errs = append(errs, fmt.Errorf("-random-dangling %v: want 0 to 1", r.dangling))
	}
	if r.payloadBytes < 0 {
		errs = append(errs, fmt.Errorf("-payload-bytes %d is negative", r.payloadBytes))
	}
	return errors.Join(errs...)
}

type socialOptions struct {
	users, maxFriends, payloadBytes int
	dangling                        float64
	seed                            uint64
}

func (s socialOptions) gen() graph.Social {
	return graph.Social{Users: s.users, MaxFriends: s.maxFriends, DanglingRate: s.dangling, PayloadBytes: s.payloadBytes, Seed: s.seed}
}

func (s socialOptions) validate() error {
	var errs []error
	if s.users < 1 || s.users > maxSeedObjects/20 {
		errs = append(errs, fmt.Errorf("-social-users %d: want 1 to %d", s.users, maxSeedObjects/20))
	}
	if s.maxFriends < 1 {
		errs = append(errs, fmt.Errorf("-social-max-friends %d: want at least 1", s.maxFriends))
	}
	if !(s.dangling >= 0 && s.dangling <= 1) {
		errs = append(errs, fmt.Errorf("-social-dangling %v: want 0 to 1", s.dangling))
	}
	if s.payloadBytes < 0 {
		errs = append(errs, fmt.Errorf("-payload-bytes %d is negative", s.payloadBytes))
	}
	return errors.Join(errs...)
}

// seed generates the -seed dataset, then loads the -load file. When ctx ends
// it stops and keeps what was committed.
func seed(ctx context.Context, st *store.Store, o *options, log *slog.Logger) error {
	switch o.seed {
	case "tasks":
		g := o.tasks.gen()
		if err := load(ctx, st, log, "tasks", newProgress(log, "tasks", "objects", int64(g.Roots*g.PerRoot())), g.Generate); err != nil {
			return err
		}
	case "random":
		g := o.random.gen()
		if err := load(ctx, st, log, "random", newProgress(log, "random", "objects", int64(g.N)), g.Generate); err != nil {
			return err
		}
	case "social":
		g := o.social.gen()
		if err := load(ctx, st, log, "social", newProgress(log, "social", "objects", int64(g.Approx())), g.Generate); err != nil {
			return err
		}
	}
	if o.loadPath == "" || ctx.Err() != nil {
		return nil
	}
	f, err := os.Open(o.loadPath)
	if err != nil {
		return fmt.Errorf("-load: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("-load: %w", err)
	}
	p := newProgress(log, o.loadPath, "bytes", fi.Size())
	r := io.TeeReader(f, p)
	return load(ctx, st, log, o.loadPath, nil, func(emit graph.EmitFunc) error {
		_, err := graph.DecodeNDJSON(r, emit)
		return err
	})
}

// load writes what gen emits into st, reporting progress in objects unless p
// is nil (then gen reports on its own).
func load(ctx context.Context, st *store.Store, log *slog.Logger, what string, p *progress, gen func(graph.EmitFunc) error) error {
	start := time.Now()
	n, err := st.Load(func(emit graph.EmitFunc) error {
		return gen(func(o *graph.Object) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if p != nil {
				p.add(1)
			}
			return emit(o)
		})
	})
	if p != nil {
		p.finish()
	}
	switch {
	case ctx.Err() != nil:
		log.Warn("load interrupted: the store holds part of the dataset; start with -reseed to load it all", "what", what, "objects", n)
		return nil
	case err != nil:
		return fmt.Errorf("dataset %s: %w", what, err)
	}
	log.Info("loaded", "what", what, "objects", n, "seconds", time.Since(start).Seconds(), "revision", st.Revision())
	return nil
}
