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

// seedPart is one dataset seed loads: a generator or the -load file.
type seedPart struct {
	what string
	p    *progress // counts objects; nil when the part reports on its own
	gen  func(graph.EmitFunc) error
}

// seed generates the -seed dataset and loads the -load file into st in one
// store.Load: all of it or, when a line is malformed or ctx ends, nothing, so
// that the next start (the store still empty) loads it again.
func seed(ctx context.Context, st *store.Store, o *options, log *slog.Logger) error {
	var parts []seedPart
	switch o.seed {
	case "tasks":
		g := o.tasks.gen()
		parts = append(parts, seedPart{"tasks", newProgress(log, "tasks", "objects", int64(g.Roots*g.PerRoot())), g.Generate})
	case "random":
		g := o.random.gen()
		parts = append(parts, seedPart{"random", newProgress(log, "random", "objects", int64(g.N)), g.Generate})
	case "social":
		g := o.social.gen()
		parts = append(parts, seedPart{"social", newProgress(log, "social", "objects", int64(g.Approx())), g.Generate})
	}
	if o.loadPath != "" {
		f, err := os.Open(o.loadPath)
		if err != nil {
			return fmt.Errorf("-load: %w", err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("-load: %w", err)
		}
		r := io.TeeReader(f, newProgress(log, o.loadPath, "bytes", fi.Size()))
		parts = append(parts, seedPart{what: o.loadPath, gen: func(emit graph.EmitFunc) error {
			_, err := graph.DecodeNDJSON(r, emit)
			return err
		}})
	}
	if len(parts) == 0 {
		return nil
	}
	start := time.Now()
	n, err := st.Load(func(emit graph.EmitFunc) error {
		for _, part := range parts {
			if err := loadPart(ctx, part, emit); err != nil {
				return err
			}
		}
		return nil
	})
	switch {
	case ctx.Err() != nil:
		log.Warn("load interrupted: nothing of it was stored; the next start loads it again")
		return nil
	case err != nil:
		return err
	}
	log.Info("loaded", "objects", n, "seconds", time.Since(start).Seconds(), "revision", st.Revision())
	return nil
}

// loadPart emits what part generates until ctx ends.
func loadPart(ctx context.Context, part seedPart, emit graph.EmitFunc) error {
	err := part.gen(func(o *graph.Object) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if part.p != nil {
			part.p.add(1)
		}
		return emit(o)
	})
	if part.p != nil {
		part.p.finish()
	}
	if err != nil {
		return fmt.Errorf("dataset %s: %w", part.what, err)
	}
	return nil
}
