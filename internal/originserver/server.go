// Package originserver serves a store.Store as lookahead's reference origin:
// the OriginService gRPC API with limits, metrics and artificial latency.
package originserver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/store"
)

// Config sets the server's limits. The zero value is ready to use.
type Config struct {
	// MaxIDs caps the ids of one BatchGet, and the roots and the known_ids
	// of one Expand, each; zero = 10000.
	MaxIDs int
	// MaxDepth caps Expand's depth; zero = 64.
	MaxDepth int
	// MaxObjects caps Expand's max_objects, and is the cap of an Expand that
	// sets none; zero = 1,000,000.
	MaxObjects int
	// Latency delays every reply, for experiments: each unary call before it
	// answers, each Expand and Watch stream before its first message. The
	// delay ends early, with the caller's status, when the caller's deadline
	// passes or it cancels. Zero = no delay.
	Latency time.Duration
	// MessageObjects and MessageBytes bound one Expand message: a level with
	// more objects or more bytes is split over several messages. Zero = 1000
	// objects and 1 MiB.
	MessageObjects int
	MessageBytes   int
	// WatchBatch caps the changes of one Watch message; zero = 1000.
	WatchBatch int
	// ShedSpeculativeAbove sheds speculation under load: a call marked
	// speculative (origin.SpeculativeKey) that would make more than this
	// many calls in flight (BatchGet, Expand, Put and Delete; not Watch)
	// is refused RESOURCE_EXHAUSTED at once, while calls without the mark
	// are always served: with many sidecars speculating, demand comes
	// first. Zero = never shed.
	ShedSpeculativeAbove int
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MaxIDs, 10000)
	def(&c.MaxDepth, 64)
	def(&c.MaxObjects, 1_000_000)
	def(&c.MessageObjects, 1000)
	def(&c.MessageBytes, 1<<20)
	def(&c.WatchBatch, 1000)
	return c
}

// Validate reports every broken rule of c, as New would: for commands that
// check settings before starting.
func (c Config) Validate() error { return c.validate() }

func (c Config) validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int
	}{
		{"max ids", c.MaxIDs}, {"max depth", c.MaxDepth}, {"max objects", c.MaxObjects},
		{"message objects", c.MessageObjects}, {"message bytes", c.MessageBytes}, {"watch batch", c.WatchBatch},
		{"shed speculative above", c.ShedSpeculativeAbove},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("originserver: %s %d is negative", f.name, f.v))
		}
	}
	if c.Latency < 0 {
		errs = append(errs, fmt.Errorf("originserver: latency %v is negative", c.Latency))
	}
	return errors.Join(errs...)
}

// Store is what the server needs from a store: store.Store (bbolt) and
// postgres.Store both have it.
type Store interface {
	// Get returns the objects among ids in request order, and the ids it
	// does not have; an id asked for twice is answered once.
	Get(ids []string) (found []*graph.Object, missing []string, err error)
	Put(o *graph.Object, expected *uint64) (version, revision uint64, err error)
	Delete(id string, expected *uint64) (revision uint64, err error)
	// Revision is the last committed change's revision.
	Revision() uint64
	// Changed is closed when the revision next advances or the store closes.
	Changed() <-chan struct{}
	// Changes lists up to limit changes after from, in revision order.
	Changes(from uint64, limit int) ([]store.Change, error)
	// Identity names the dataset (Describe's dataset_id, and the Watch
	// header's): stable across restarts, different for any other dataset;
	// empty = none.
	Identity() string
}

// Server implements lookaheadv1.OriginServiceServer over a store. It starts
// no goroutines; Watch streams run on the gRPC server's and end when their
// caller goes away or Shutdown is called.
type Server struct {
	lookaheadv1.UnimplementedOriginServiceServer

	st  Store
	cfg Config
	m   *serverMetrics

	// wait sleeps for d unless ctx ends first; tests replace it to observe
	// the latency without sleeping.
	wait func(ctx context.Context, d time.Duration) error

	shutdown     chan struct{} // closed by Shutdown
	shutdownOnce sync.Once

	inFlight atomic.Int64 // calls admitted and not yet done (see admit)
}

// New serves st with cfg's limits and registers the server's metrics
// (lookahead_origin_*) on reg; a nil reg registers them nowhere.
func New(st Store, cfg Config, reg prometheus.Registerer) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if st == nil {
		return nil, errors.New("originserver: nil store")
	}
	m, err := newServerMetrics(reg, st)
	if err != nil {
		return nil, err
	}
	return &Server{
		st:       st,
		cfg:      cfg.withDefaults(),
		m:        m,
		wait:     sleep,
		shutdown: make(chan struct{}),
	}, nil
}

// Shutdown ends every Watch stream, running or future, with UNAVAILABLE, so
// that a grpc.Server's GracefulStop need not wait for them: watches never end
// on their own. Other calls are unaffected. Shutdown is idempotent.
func (s *Server) Shutdown() {
	s.shutdownOnce.Do(func() { close(s.shutdown) })
}

// delay holds a reply back by Config.Latency.
func (s *Server) delay(ctx context.Context) error {
	if s.cfg.Latency <= 0 {
		return nil
	}
	return s.wait(ctx, s.cfg.Latency)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
