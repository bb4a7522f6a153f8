package prefetch

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// DefaultQueueBytes is Config.QueueBytes's default, for each of the two
// queues: as much as the default prefetch tier (--prefetch-bytes), 64 KiB
// for each of QueueSize's default 1024 jobs or reads, far more than a read
// of ordinary objects holds: the bytes bind before the count only when
// reads are of objects far larger than usual, or of hubs.
const DefaultQueueBytes = 64 << 20

// Mode selects whether the scheduler speculates.
type Mode string

// Modes.
const (
	ModeStatic   Mode = "static"   // expand below demanded objects with the planner's budget
	ModeAdaptive Mode = "adaptive" // the planner learns depth and fields (use NewAdaptive)
	ModeOff      Mode = "off"      // demand fetches only, hints included: an operator's kill switch
)

// Config tunes the scheduler. Zero values take the documented defaults.
type Config struct {
	Mode    Mode // default static
	Workers int  // concurrent speculative origin requests (Knafla's support threads); default 4
	// QueueSize is how many jobs wait for a worker, newest run first
	// (beyond it the oldest are dropped), and, with a Chooser, how many
	// reads wait for the learner (beyond it a request waits: see choose);
	// default 1024.
	QueueSize int
	// QueueBytes bounds, in Size bytes (see sizeBound), the objects the
	// jobs waiting keep alive (beyond it the oldest are dropped: see
	// queue), and, apart, the objects the reads waiting for the learner
	// keep alive (beyond it a request waits: see readBytes); default
	// 64 MiB. A queued object is usually cached too, but one evicted
	// meanwhile lives on until its job or read is done with, and QueueSize
	// alone would let each queue hold QueueSize requests' worth of the
	// largest objects the origin may send.
	QueueBytes int64
	// TierBytes is the prefetch tier's budget: one job fetches at most what
	// half of it holds (see tierCap); 0 = no cap.
	TierBytes int64
	Metrics   Metrics // nil counts nothing
	// Window paces speculative origin calls below Workers (see Window);
	// nil = NewWindow(Workers, Metrics), which nothing moves.
	Window *Window
	// Held, if not nil, is told of the held objects a job walks through
	// where it predicts reads: what it would have fetched had the cache
	// not held them, a level (or a plan's step) at a time, with the job's
	// context (see From). The near-cache hub pushes them (near.Hub.Held):
	// a warm cache predicts as much as a cold one, and only the cold
	// one's predictions arrive from the origin. objs is iterated at most
	// once, during the call: a listener with nobody to tell (no near cache
	// subscribed) does not look at it, and a chance walk then builds
	// nothing (a static plan's step keeps the held objects it peeked, one
	// append each). Called on a worker; it must not block.
	Held func(ctx context.Context, objs iter.Seq[*graph.Object])
}

func (c *Config) setDefaults() {
	if c.Mode == "" {
		c.Mode = ModeStatic
	}
	if c.Workers == 0 {
		c.Workers = 4
	}
	if c.QueueSize == 0 {
		c.QueueSize = 1024
	}
	if c.QueueBytes == 0 {
		c.QueueBytes = DefaultQueueBytes
	}
	if c.Metrics == nil {
		c.Metrics = nopMetrics{}
	}
	if c.Held == nil {
		c.Held = func(context.Context, iter.Seq[*graph.Object]) {}
	}
}

// Validate reports every broken rule of c, its zero values read as the
// defaults, as New would: for commands that check settings before starting.
func (c Config) Validate() error {
	c.setDefaults()
	return c.validate()
}

func (c Config) validate() error {
	var errs []error
	if c.Mode != ModeStatic && c.Mode != ModeAdaptive && c.Mode != ModeOff {
		errs = append(errs, fmt.Errorf("prefetch mode %q: want static, adaptive or off", c.Mode))
	}
	if c.Workers < 1 {
		errs = append(errs, fmt.Errorf("prefetch workers %d: must be at least 1", c.Workers))
	}
	if c.QueueSize < 1 {
		errs = append(errs, fmt.Errorf("prefetch queue size %d: must be at least 1", c.QueueSize))
	}
	if c.QueueBytes < 1 {
		errs = append(errs, fmt.Errorf("prefetch queue bytes %d: must be at least 1", c.QueueBytes))
	}
	if c.TierBytes < 0 {
		errs = append(errs, fmt.Errorf("prefetch tier bytes %d: must not be negative", c.TierBytes))
	}
	return errors.Join(errs...)
}
