package server

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"

	// The proto codec registers itself; RequestCodec wraps it.
	_ "google.golang.org/grpc/encoding/proto"
)

// RequestCodec answers a request that does not decode — invalid UTF-8 in a
// string field, a truncated or corrupt message — INVALID_ARGUMENT naming
// the problem, where gRPC alone answers INTERNAL. grpc-go turns any error
// of a codec's Unmarshal into INTERNAL before the handler runs, so the
// codec does not return the error: it remembers it for the message, and
// the codec's interceptors, which see each message after it was decoded,
// answer it. Install both with ServerOptions; without the interceptors,
// an undecodable request would reach its handler half decoded.
type RequestCodec struct {
	proto   encoding.CodecV2
	maxList int // entries of a list of strings; 0 = no limit

	held *heldReplies // the server's replies (Server.Codec); nil = none

	mu  sync.Mutex    // protects bad
	bad map[any]error // messages that did not decode, until their interceptor takes them
	n   atomic.Int64  // len(bad): every request reads it, without the lock
}

// NewRequestCodec wraps grpc-go's proto codec. A request with a list of
// strings (ids, roots, fields) of more than maxList entries is refused
// before it is decoded (see longList); 0 = no limit.
func NewRequestCodec(maxList int) *RequestCodec {
	return &RequestCodec{proto: encoding.GetCodecV2("proto"), maxList: maxList, bad: map[any]error{}}
}

// ServerOptions install the codec for every request of a server, and the
// interceptors that answer what did not decode. Put them after the
// counting interceptors, so that these answers are counted too.
func (c *RequestCodec) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ForceServerCodecV2(c),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := c.take(req); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			return h(srv, checkedStream{ss, c})
		}),
	}
}

// Marshal implements encoding.CodecV2. A reply of the server's (Server.reply)
// is its bytes already: they go as they are, in a buffer that gives the
// reply's budget back once gRPC has written them.
func (c *RequestCodec) Marshal(v any) (mem.BufferSlice, error) {
	if r, ok := c.held.take(v); ok { // a reply holding its bytes of the budget (replies.go)
		return r.buffers(), nil
	}
	if raw := encodedReply(v); raw != nil { // a small reply of the server's
		return mem.BufferSlice{mem.SliceBuffer(raw)}, nil
	}
	return c.proto.Marshal(v)
}

// Unmarshal implements encoding.CodecV2: an error is kept for the
// interceptors, not returned.
func (c *RequestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.longList(data, v)
	if err == nil {
		err = c.proto.Unmarshal(data, v)
	}
	if err != nil {
		c.mu.Lock()
		c.bad[v] = err
		c.n.Add(1)
		c.mu.Unlock()
	}
	return nil
}

// Name implements encoding.CodecV2.
func (c *RequestCodec) Name() string { return c.proto.Name() }

// take returns the INVALID_ARGUMENT status of a message that did not
// decode, forgetting it, or nil.
func (c *RequestCodec) take(msg any) error {
	if c.n.Load() == 0 { // the common case: every request so far decoded
		return nil
	}
	c.mu.Lock()
	err, ok := c.bad[msg]
	if ok {
		delete(c.bad, msg)
		c.n.Add(-1)
	}
	c.mu.Unlock()
	if !ok {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err // a refusal of the codec's own, already stated
	}
	return status.Error(codes.InvalidArgument, fmt.Sprintf("request: %v", err))
}

// pending is how many undecodable messages await their interceptor.
func (c *RequestCodec) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.bad)
}

// checkedStream answers a streamed request message that did not decode.
type checkedStream struct {
	grpc.ServerStream
	c *RequestCodec
}

func (s checkedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return s.c.take(m)
}
