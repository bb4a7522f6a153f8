package lookahead

import (
	"context"
	"errors"
	"io"
	"iter"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// Graph describes a GetGraph walk. Nil Depth and MaxObjects take the
// sidecar's settings; empty Fields follows every reference.
type Graph struct {
	Roots      []string
	Depth      *uint32
	MaxObjects *uint32
	Fields     []string
}

func (g Graph) request() *lookaheadv1.GetGraphRequest {
	return &lookaheadv1.GetGraphRequest{Roots: g.Roots, Depth: g.Depth, MaxObjects: g.MaxObjects, Fields: g.Fields}
}

// GetGraph streams the subgraph below g.Roots to fn in breadth-first order
// and returns the ids that do not exist. An error from fn ends the walk and
// is returned.
func (c *Client) GetGraph(ctx context.Context, g Graph, fn func(Result) error) (missing []string, err error) {
	s := c.StreamGraph(ctx, g)
	defer s.Close()
	for s.Next() {
		if err := fn(s.Result()); err != nil {
			return nil, err
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return s.Missing(), nil
}

// StreamGraph starts a GetGraph walk read with Next, as objects arrive:
//
//	s := c.StreamGraph(ctx, g)
//	defer s.Close()
//	for s.Next() {
//		use(s.Result())
//	}
//	if err := s.Err(); err != nil { ... }
//	missing := s.Missing()
func (c *Client) StreamGraph(ctx context.Context, g Graph) *GraphStream {
	ctx, cancel := context.WithCancel(ctx)
	s := &GraphStream{cancel: cancel}
	s.stream, s.err = c.rpc.GetGraph(ctx, g.request())
	return s
}

// GraphStream is a GetGraph walk in progress. It is not safe for concurrent
// use.
type GraphStream struct {
	stream  lookaheadv1.SidecarService_GetGraphClient
	cancel  context.CancelFunc
	chunk   []*lookaheadv1.Result
	cur     Result
	missing []string
	err     error
	done    bool
}

// Next advances to the next object; false at the end of the walk or on an
// error (see Err).
func (s *GraphStream) Next() bool {
	for len(s.chunk) == 0 {
		if s.done || s.err != nil {
			return false
		}
		resp, err := s.stream.Recv()
		if errors.Is(err, io.EOF) {
			s.done = true
			s.cancel()
			return false
		}
		if err != nil {
			s.err = err
			s.cancel()
			return false
		}
		s.chunk = resp.GetResults()
		s.missing = append(s.missing, resp.GetMissingIds()...)
	}
	s.cur = fromProto(s.chunk[0])
	s.chunk = s.chunk[1:]
	return true
}

// Result is the object Next moved to.
func (s *GraphStream) Result() Result { return s.cur }

// Err is the error that ended the walk, nil at its normal end.
func (s *GraphStream) Err() error { return s.err }

// Missing lists the ids found not to exist so far; complete once Next
// returned false without an error.
func (s *GraphStream) Missing() []string { return s.missing }

// Close ends the walk early; it is safe to call after the end.
func (s *GraphStream) Close() { s.cancel() }

// All returns the rest of the walk as an iterator; an error is yielded once,
// with a zero Result, and ends it. Breaking out of the loop ends the walk.
func (s *GraphStream) All() iter.Seq2[Result, error] {
	return func(yield func(Result, error) bool) {
		defer s.Close()
		for s.Next() {
			if !yield(s.Result(), nil) {
				return
			}
		}
		if s.err != nil {
			yield(Result{}, s.err)
		}
	}
}
