package server

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
)

// Replies are encoded here, each object as the bytes it came from the
// origin in, and hold their bytes of the sidecar's reply budget
// (streamMemory, --stream-memory-bytes) from then until gRPC has written
// them to the connection. gRPC queues what a stream sends until the
// client's flow-control window lets it out: a client that asks and does
// not read keeps each of its streams' replies in the sidecar's memory, as
// many as --max-connections × --max-concurrent-streams of up to
// --max-message-bytes each, were they not held against one budget. When
// the budget is spent, a reply waits for room within its request's
// deadline; replies read as they come never find it spent.
//
// The handler that encodes a reply registers it (Server.held); the codec,
// which gRPC asks for the reply's bytes, takes it back and hands the bytes
// to gRPC in a buffer whose release gives the budget back: gRPC frees a
// message's buffers once it has written them, or dropped them with their
// stream. gRPC asks the codec for every reply a handler returns without
// an error, so a registered reply is always taken: a handler registers
// its reply last, and nothing between it and gRPC turns a reply into an
// error. A connection that closes with replies still queued is the one
// case where gRPC lets go of buffers without freeing them (grpc-go 1.85:
// the loopy writer exits, its streams' queues are dropped): the garbage
// collector gives their budget back then (runtime.AddCleanup). A Subscribe
// message registers the same way (sendHeld), its release the near hub's
// count of the events it carries rather than a share of the budget.

var (
	batchResults = graphpb.FieldNumber(&lookaheadv1.BatchGetResponse{}, "results")
	batchMissing = graphpb.FieldNumber(&lookaheadv1.BatchGetResponse{}, "missing_ids")
	getObject    = graphpb.FieldNumber(&lookaheadv1.GetResponse{}, "object")
	getStatus    = graphpb.FieldNumber(&lookaheadv1.GetResponse{}, "status")
	getStale     = graphpb.FieldNumber(&lookaheadv1.GetResponse{}, "stale")
)

// heldReplies links each reply message, from its handler to the codec
// (Server.Codec), to the budget it holds.
type heldReplies struct {
	n atomic.Int64 // entries of m: the codec's check when there are none
	m sync.Map     // reply message → *heldReply
}

// heldReply is a reply's bytes and the release of its budget.
type heldReply struct {
	raw     []byte
	release *releaseOnce
}

// releaseOnce gives a reply's budget back once: when gRPC frees its
// buffer, or when the collector finds it dropped without.
type releaseOnce struct {
	done    atomic.Bool
	release func()
}

func (r *releaseOnce) do() {
	if r.done.CompareAndSwap(false, true) {
		r.release()
	}
}

func newHeldReply(raw []byte, release func()) *heldReply {
	r := &heldReply{raw: raw, release: &releaseOnce{release: release}}
	runtime.AddCleanup(r, (*releaseOnce).do, r.release)
	return r
}

func (h *heldReplies) put(msg any, r *heldReply) {
	h.m.Store(msg, r)
	h.n.Add(1)
}

// take returns msg's registration, forgetting it.
func (h *heldReplies) take(msg any) (*heldReply, bool) {
	if h == nil || h.n.Load() == 0 {
		return nil, false
	}
	v, ok := h.m.LoadAndDelete(msg)
	if !ok {
		return nil, false
	}
	h.n.Add(-1)
	return v.(*heldReply), true
}

// buffers hands r's bytes to gRPC in a buffer whose release gives the
// budget back (r.raw's capacity is above gRPC's pooling threshold, or
// mem.NewBuffer would keep no pool for it).
func (r *heldReply) buffers() mem.BufferSlice {
	return mem.BufferSlice{mem.NewBuffer(&r.raw, r)}
}

// Get implements mem.BufferPool; gRPC never asks a message's buffer's pool
// for a buffer.
func (r *heldReply) Get(n int) *[]byte {
	b := make([]byte, n)
	return &b
}

// Put implements mem.BufferPool: gRPC is done with the reply's bytes.
func (r *heldReply) Put(*[]byte) { r.release.do() }

// Codec is the request codec of the server's gRPC server (its
// ServerOptions), refusing lists of more than Config.MaxIDs entries, and
// handing out replies' bytes as encoded, holding their budget until gRPC
// has written them. Without it, a reply's budget is given back as soon as
// the reply is encoded.
func (s *Server) Codec() *RequestCodec {
	c := NewRequestCodec(s.cfg.MaxIDs)
	c.held = &s.held
	s.codec.Store(true)
	return c
}

// replyOf is what a reply carries: results in field results of its
// message and the missing ids of a BatchGet, or, for a Get (get), its one
// result; and how many bytes it takes encoded, at most.
type replyOf struct {
	get     bool
	results protowire.Number
	rs      []fetch.Result
	missing []string
	get1    fetch.Result  // a Get's result
	one     encodedObject // and its object
	size    int
}

// getReply is the reply of a Get answered with r (its size exact).
func getReply(r fetch.Result) replyOf {
	one := encodeObject(r.Object)
	size := protowire.SizeTag(getObject) + protowire.SizeBytes(one.size) + 2*(protowire.SizeTag(getStatus)+1)
	return replyOf{get: true, get1: r, one: one, size: size}
}

// resultsReply is the reply of rs, in field results of its message, and
// of missing (a BatchGet's).
func resultsReply(results protowire.Number, rs []fetch.Result, missing []string) replyOf {
	size := resultsSize(rs)
	for _, id := range missing {
		size += protowire.SizeTag(batchMissing) + protowire.SizeBytes(len(id))
	}
	return replyOf{results: results, rs: rs, missing: missing, size: size}
}

// encode appends the reply's fields to raw.
func (e replyOf) encode(raw []byte) ([]byte, error) {
	if e.get {
		return appendGet(raw, e.one, e.get1)
	}
	for _, r := range e.rs {
		var err error
		if raw, err = appendResult(raw, e.results, r); err != nil {
			return nil, status.Errorf(codes.Internal, "encoding object %q: %v", r.Object.ID, err)
		}
	}
	for _, id := range e.missing {
		raw = protowire.AppendTag(raw, batchMissing, protowire.BytesType)
		raw = protowire.AppendString(raw, id)
	}
	return raw, nil
}

// appendGet appends r, whose object is obj, as a Get reply's fields.
func appendGet(raw []byte, obj encodedObject, r fetch.Result) ([]byte, error) {
	raw = protowire.AppendTag(raw, getObject, protowire.BytesType)
	raw, err := obj.append(raw)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encoding object %q: %v", r.Object.ID, err)
	}
	if st := uint64(cacheStatus(r.Status)); st != 0 {
		raw = protowire.AppendTag(raw, getStatus, protowire.VarintType)
		raw = protowire.AppendVarint(raw, st)
	}
	if r.Stale {
		raw = protowire.AppendTag(raw, getStale, protowire.VarintType)
		raw = protowire.AppendVarint(raw, 1)
	}
	return raw, nil
}

// reply makes msg, an empty reply message, the reply e: its fields are
// msg's unknown fields, which protobuf writes out as they are. One of more
// than 1 KiB takes its bytes of the reply budget before it is encoded,
// waiting for room until ctx ends, and holds them until gRPC has written
// it; a smaller one (a hit on a small object) never waits: what such
// replies hold is bounded by the streams open at once.
func (s *Server) reply(ctx context.Context, msg proto.Message, e replyOf) error {
	size := e.size
	var release func()
	if !mem.IsBelowBufferPoolingThreshold(size) {
		var err error
		if release, err = s.streams.hold(ctx, int64(size)); err != nil {
			return status.Errorf(codes.ResourceExhausted, "replies not yet read by their clients hold %d bytes, the limit (--stream-memory-bytes): %v", s.cfg.StreamBytes, err)
		}
	}
	raw, err := e.encode(make([]byte, 0, size))
	if err == nil {
		msg.ProtoReflect().SetUnknown(protoreflect.RawFields(raw))
	}
	switch {
	case release == nil:
	case err != nil || !s.codec.Load(): // without Codec, gRPC's own copies the bytes now
		release()
	default:
		s.held.put(msg, newHeldReply(raw, release))
	}
	return err
}

// encodedReply is the bytes of v when it is a reply Server.reply encoded
// (one whose fields are all unknown fields), else nil.
func encodedReply(v any) []byte {
	var m proto.Message
	switch r := v.(type) {
	case *lookaheadv1.GetResponse:
		if r.GetObject() == nil && r.GetStatus() == 0 && !r.GetStale() {
			m = r
		}
	case *lookaheadv1.BatchGetResponse:
		if len(r.GetResults()) == 0 && len(r.GetMissingIds()) == 0 {
			m = r
		}
	case *lookaheadv1.GetGraphResponse:
		if len(r.GetResults()) == 0 && len(r.GetMissingIds()) == 0 {
			m = r
		}
	}
	if m == nil {
		return nil
	}
	if raw := m.ProtoReflect().GetUnknown(); len(raw) > 0 {
		return raw
	}
	return nil
}
