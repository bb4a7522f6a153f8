// Package server is the sidecar's gRPC boundary: it validates requests, runs
// them on the fetcher and the scheduler and turns errors into gRPC status
// codes.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
	"github.com/lookahead-dev/lookahead/internal/near"
	"github.com/lookahead-dev/lookahead/internal/prefetch"
	"github.com/lookahead-dev/lookahead/internal/reqcheck"
)

// Config holds the sidecar's request limits. Zero values take the defaults.
type Config struct {
	MaxIDs       int // ids in one BatchGet or GetGraph, and Invalidate; default 1000
	MaxDepth     int // depth of a GetGraph or a hint; default 16
	MaxObjects   int // max_objects of a GetGraph or a hint; default 100000
	ChunkObjects int // objects per GetGraph message; default 256
	ChunkBytes   int // object bytes per GetGraph message, roughly; default 1 MiB
	// Tracer spans each cache lookup of a Get or BatchGet; nil = no spans.
	Tracer trace.Tracer
	// MaxWalks bounds the GetGraph streams served at once; one beyond it is
	// refused RESOURCE_EXHAUSTED at once, so a flood of walks cannot take
	// the sidecar's memory and origin connections from everyone else (a Get
	// that hits never waits for them); default 64.
	MaxWalks int
	// StreamBytes bounds the bytes all replies together hold for their
	// clients until gRPC has written them (see streamMemory and
	// replies.go); default 64 MiB.
	StreamBytes int64
	// MaxOriginRequests bounds the Gets and BatchGets with an uncached id
	// served at once, across all connections; beyond it they wait, up to
	// MaxOriginWaiting, and beyond that are refused RESOURCE_EXHAUSTED (see
	// misses). Defaults 256 and 4096.
	MaxOriginRequests, MaxOriginWaiting int
	// MaxReplyBytes bounds a BatchGet reply: one whose objects take more
	// is refused RESOURCE_EXHAUSTED before it is built, where gRPC would
	// refuse it only once encoded whole, after the sidecar had held it
	// twice (objects and encoding) for a few bytes of request. The
	// sidecar's --max-message-bytes; default 64 MiB.
	MaxReplyBytes int64
}

// SetDefaults fills zero values with the documented defaults.
func (c *Config) SetDefaults() {
	if c.MaxIDs == 0 {
		c.MaxIDs = 1000
	}
	if c.MaxDepth == 0 {
		c.MaxDepth = 16
	}
	if c.MaxObjects == 0 {
		c.MaxObjects = 100000
	}
	if c.ChunkObjects == 0 {
		c.ChunkObjects = 256
	}
	if c.ChunkBytes == 0 {
		c.ChunkBytes = 1 << 20
	}
	if c.MaxWalks == 0 {
		c.MaxWalks = 64
	}
	if c.StreamBytes == 0 {
		c.StreamBytes = 64 << 20
	}
	if c.MaxOriginRequests == 0 {
		c.MaxOriginRequests = 256
	}
	if c.MaxOriginWaiting == 0 {
		c.MaxOriginWaiting = 4096
	}
	if c.MaxReplyBytes == 0 {
		c.MaxReplyBytes = 64 << 20
	}
}

// Validate reports every broken limit.
func (c Config) Validate() error {
	var errs []error
	for _, v := range []struct {
		name string
		n    int
	}{{"max ids", c.MaxIDs}, {"max depth", c.MaxDepth}, {"max objects", c.MaxObjects},
		{"chunk objects", c.ChunkObjects}, {"chunk bytes", c.ChunkBytes}, {"max walks", c.MaxWalks},
		{"max origin requests", c.MaxOriginRequests}, {"max origin waiting", c.MaxOriginWaiting}} {
		if v.n < 1 {
			errs = append(errs, fmt.Errorf("%s %d: must be at least 1", v.name, v.n))
		}
	}
	if c.StreamBytes < 1 {
		errs = append(errs, fmt.Errorf("stream bytes %d: must be at least 1", c.StreamBytes))
	}
	if c.MaxReplyBytes < 1 {
		errs = append(errs, fmt.Errorf("max reply bytes %d: must be at least 1", c.MaxReplyBytes))
	}
	return errors.Join(errs...)
}

// Writer is the origin's write path.
type Writer interface {
	Put(ctx context.Context, o *graph.Object, expected *uint64) (uint64, error)
	Delete(ctx context.Context, id string, expected *uint64) error
}

// Fetcher answers demands (fetch.Fetcher).
type Fetcher interface {
	Get(ctx context.Context, ids []string) (*fetch.Answer, error)
	Walk(ctx context.Context, roots []string, b graph.Budget, ahead int64, emit func(level int, rs []fetch.Result) error) (missing []string, err error)
	// Changed is the one entry of write-side events: see fetch.Fetcher.Changed.
	Changed(id string, version uint64, deleted bool) bool
	// SetAdmission: see fetch.Fetcher.SetAdmission.
	SetAdmission(a fetch.Admission)
	// Peek answers from the cache alone: see fetch.Fetcher.Peek.
	Peek(id string) (*graph.Object, bool)
}

// Scheduler is told of every answered demand, to speculate for the
// client of ctx, and of every client that went (prefetch.Scheduler).
type Scheduler interface {
	After(ctx context.Context, a *fetch.Answer, h prefetch.Hint)
	Gone(c *prefetch.Client)
}

// Server implements lookaheadv1.SidecarServiceServer.
type Server struct {
	lookaheadv1.UnimplementedSidecarServiceServer
	cfg     Config
	fetcher Fetcher
	sched   Scheduler
	writer  Writer
	log     *slog.Logger
	walks   chan struct{} // one token per GetGraph being served
	streams *streamMemory
	held    heldReplies // replies holding stream memory until gRPC has written them
	codec   atomic.Bool // Codec was called: its codec takes held replies back
	misses  *misses
	near    *near.Hub // nil unless EnableNear
}

// New builds the sidecar service. f's Gets pass its admission of misses
// (--max-origin-requests, --max-origin-waiting) from now on.
func New(cfg Config, f Fetcher, sched Scheduler, w Writer, log *slog.Logger) (*Server, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := newMisses(cfg.MaxOriginRequests, cfg.MaxOriginWaiting)
	f.SetAdmission(m.admit)
	return &Server{cfg: cfg, fetcher: f, sched: sched, writer: w, log: log,
		walks: make(chan struct{}, cfg.MaxWalks), streams: newStreamMemory(cfg.StreamBytes),
		misses: m}, nil
}

// get answers ids and tells the scheduler.
func (s *Server) get(ctx context.Context, ids []string, h prefetch.Hint) (*fetch.Answer, error) {
	s.track(ctx, ids)
	if h.Given() {
		ctx = prefetch.WithHint(ctx, h)
	}
	ctx, span := s.lookupSpan(ctx, len(ids))
	a, err := s.fetcher.Get(ctx, ids)
	endLookup(span, a, err)
	if err != nil {
		return nil, toStatus(err)
	}
	s.sched.After(ctx, a, h)
	return a, nil
}

// Get implements lookaheadv1.SidecarServiceServer.
func (s *Server) Get(ctx context.Context, req *lookaheadv1.GetRequest) (*lookaheadv1.GetResponse, error) {
	if err := reqcheck.ID("id", req.GetId()); err != nil {
		return nil, err
	}
	h, err := s.hint(req.GetHint())
	if err != nil {
		return nil, err
	}
	a, err := s.get(ctx, []string{req.GetId()}, h)
	if err != nil {
		return nil, err
	}
	if len(a.Results) == 0 {
		return nil, status.Errorf(codes.NotFound, "object %q not found", req.GetId())
	}
	resp := &lookaheadv1.GetResponse{}
	if err := s.reply(ctx, resp, getReply(a.Results[0])); err != nil {
		return nil, err
	}
	return resp, nil
}

// BatchGet implements lookaheadv1.SidecarServiceServer.
func (s *Server) BatchGet(ctx context.Context, req *lookaheadv1.BatchGetRequest) (*lookaheadv1.BatchGetResponse, error) {
	if err := s.checkIDs("ids", req.GetIds()); err != nil {
		return nil, err
	}
	h, err := s.hint(req.GetHint())
	if err != nil {
		return nil, err
	}
	if isReport(ctx) {
		return s.report(ctx, req.GetIds(), h)
	}
	a, err := s.get(ctx, req.GetIds(), h)
	if err != nil {
		return nil, err
	}
	e := resultsReply(batchResults, a.Results, a.Missing)
	if n := int64(e.size); n > s.cfg.MaxReplyBytes {
		return nil, status.Errorf(codes.ResourceExhausted, "the %d objects asked for take %d bytes, more than a reply may (%d, --max-message-bytes): ask for fewer ids at a time",
			len(a.Results), n, s.cfg.MaxReplyBytes)
	}
	resp := &lookaheadv1.BatchGetResponse{}
	if err := s.reply(ctx, resp, e); err != nil {
		return nil, err
	}
	return resp, nil
}

// GetGraph implements lookaheadv1.SidecarServiceServer.
func (s *Server) GetGraph(req *lookaheadv1.GetGraphRequest, stream lookaheadv1.SidecarService_GetGraphServer) error {
	if len(req.GetRoots()) == 0 {
		return status.Error(codes.InvalidArgument, "roots: at least one root id is required")
	}
	if err := s.checkIDs("roots", req.GetRoots()); err != nil {
		return err
	}
	b := graph.Budget{Depth: s.cfg.MaxDepth, MaxObjects: s.cfg.MaxObjects, Fields: req.GetFields()}
	if req.Depth != nil {
		b.Depth = int(req.GetDepth())
	}
	if req.MaxObjects != nil {
		b.MaxObjects = int(req.GetMaxObjects())
	}
	if err := s.checkBudget(b.Depth, b.MaxObjects, b.Fields); err != nil {
		return err
	}
	if b.MaxObjects == 0 { // 0 asks for no cap: the server's cap still holds
		b.MaxObjects = s.cfg.MaxObjects
	}
	done, err := s.admitWalk()
	if err != nil {
		return err
	}
	defer done()
	// Each of MaxWalks walks may have its share of StreamBytes received
	// ahead of its client.
	ahead := max(s.cfg.StreamBytes/int64(s.cfg.MaxWalks), 1)
	missing, err := s.fetcher.Walk(stream.Context(), req.GetRoots(), b, ahead, func(_ int, rs []fetch.Result) error {
		return s.sendLevel(stream, rs) // what arrived of a level, in its order: send it now
	})
	if err != nil {
		return toStatus(err)
	}
	if len(missing) == 0 {
		return nil
	}
	return stream.Send(&lookaheadv1.GetGraphResponse{MissingIds: missing})
}

// Put implements lookaheadv1.SidecarServiceServer.
func (s *Server) Put(ctx context.Context, req *lookaheadv1.PutRequest) (*lookaheadv1.PutResponse, error) {
	o := graphpb.FromProto(req.GetObject())
	if err := o.Validate(); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "object: %v", err)
	}
	s.track(ctx, []string{o.ID})
	v, err := s.writer.Put(ctx, o, req.ExpectedVersion)
	// Drop older copies and refuse any fetch still carrying one: this
	// sidecar's own reads see the write at once, before Watch delivers it.
	// On an error too, at an unknown version: the write may have landed.
	s.fetcher.Changed(o.ID, v, false)
	if err != nil {
		return nil, toStatus(err)
	}
	return &lookaheadv1.PutResponse{Version: v}, nil
}

// Delete implements lookaheadv1.SidecarServiceServer.
func (s *Server) Delete(ctx context.Context, req *lookaheadv1.DeleteRequest) (*lookaheadv1.DeleteResponse, error) {
	if err := reqcheck.ID("id", req.GetId()); err != nil {
		return nil, err
	}
	s.track(ctx, []string{req.GetId()})
	err := s.writer.Delete(ctx, req.GetId(), req.ExpectedVersion)
	// Whatever the origin answered (the delete may have landed before an
	// error): no copy read before it is served after it. Only a delete the
	// origin confirmed is one, though: the version floor of a deletion
	// refuses the versions up to the last one known, and after a refused
	// conditional delete that is the live object (it was answered as
	// "older than one the origin announced" until the floor expired).
	s.fetcher.Changed(req.GetId(), 0, err == nil)
	if err != nil {
		return nil, toStatus(err)
	}
	return &lookaheadv1.DeleteResponse{}, nil
}

// Invalidate implements lookaheadv1.SidecarServiceServer.
func (s *Server) Invalidate(_ context.Context, req *lookaheadv1.InvalidateRequest) (*lookaheadv1.InvalidateResponse, error) {
	if err := s.checkIDs("ids", req.GetIds()); err != nil {
		return nil, err
	}
	n := 0
	for _, id := range req.GetIds() {
		if s.fetcher.Changed(id, 0, false) {
			n++
		}
	}
	return &lookaheadv1.InvalidateResponse{Invalidated: uint32(n)}, nil
}

func cacheStatus(s fetch.Status) lookaheadv1.CacheStatus {
	switch s {
	case fetch.StatusMiss:
		return lookaheadv1.CacheStatus_CACHE_STATUS_MISS
	case fetch.StatusHit:
		return lookaheadv1.CacheStatus_CACHE_STATUS_HIT
	case fetch.StatusHitPrefetched:
		return lookaheadv1.CacheStatus_CACHE_STATUS_HIT_PREFETCHED
	case fetch.StatusJoined:
		return lookaheadv1.CacheStatus_CACHE_STATUS_JOINED
	}
	return lookaheadv1.CacheStatus_CACHE_STATUS_UNSPECIFIED
}
