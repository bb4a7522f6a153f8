package server

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/prefetch"
	"github.com/lookahead-dev/lookahead/internal/reqcheck"
)

// checkIDs validates a list of ids and its length against Config.MaxIDs.
func (s *Server) checkIDs(name string, ids []string) error {
	return reqcheck.IDs(name, ids, s.cfg.MaxIDs)
}

func (s *Server) checkBudget(depth, maxObjects int, fields []string) error {
	if depth > s.cfg.MaxDepth {
		return status.Errorf(codes.InvalidArgument, "depth %d exceeds the limit of %d", depth, s.cfg.MaxDepth)
	}
	if maxObjects > s.cfg.MaxObjects {
		return status.Errorf(codes.InvalidArgument, "max_objects %d exceeds the limit of %d", maxObjects, s.cfg.MaxObjects)
	}
	for i, f := range fields {
		if f == "" {
			return status.Errorf(codes.InvalidArgument, "fields[%d]: empty field name", i)
		}
	}
	return nil
}

// hint validates a request's prefetch hint and converts it.
func (s *Server) hint(h *lookaheadv1.PrefetchHint) (prefetch.Hint, error) {
	if h == nil {
		return prefetch.Hint{}, nil
	}
	var out prefetch.Hint
	if h.Depth != nil {
		d := int(h.GetDepth())
		out.Depth = &d
	}
	if h.MaxObjects != nil {
		n := int(h.GetMaxObjects())
		out.MaxObjects = &n
	}
	out.Fields = h.GetFields()
	if err := s.checkBudget(int(h.GetDepth()), int(h.GetMaxObjects()), out.Fields); err != nil {
		return prefetch.Hint{}, status.Errorf(codes.InvalidArgument, "hint: %s", status.Convert(err).Message())
	}
	return out, nil
}

// toStatus turns an engine or origin error into the sidecar's status: the
// origin client's own verdicts first (an open circuit is UNAVAILABLE
// whatever failure opened it; an incomplete reply is the origin's fault,
// never a NOT_FOUND; a malformed one INTERNAL), then the caller's own
// deadline and cancellation, then what the origin said.
func toStatus(err error) error {
	msg := plain(err)
	switch {
	case errors.Is(err, origin.ErrObjectTooLarge):
		return status.Error(codes.InvalidArgument, msg)
	case errors.Is(err, fetch.ErrOlderThanAnnounced), errors.Is(err, fetch.ErrMalformedExpand):
		return status.Error(codes.Unavailable, "origin fault: "+msg)
	case errors.Is(err, origin.ErrCircuitOpen), errors.Is(err, origin.ErrIncompleteReply):
		return status.Error(codes.Unavailable, "origin unavailable: "+msg)
	case errors.Is(err, origin.ErrMalformedReply):
		return status.Error(codes.Internal, msg)
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded: "+msg)
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "canceled: "+msg)
	}
	st, ok := status.FromError(err)
	if !ok {
		return status.Error(codes.Internal, msg)
	}
	switch st.Code() {
	case codes.Unavailable:
		return status.Error(codes.Unavailable, "origin unavailable: "+msg)
	case codes.DeadlineExceeded, codes.Canceled, codes.ResourceExhausted,
		codes.NotFound, codes.FailedPrecondition, codes.Aborted, codes.InvalidArgument,
		codes.PermissionDenied, codes.Unauthenticated:
		return status.Error(st.Code(), msg)
	}
	return status.Error(codes.Internal, "origin: "+msg)
}

// plain is err's text with the origin's gRPC status, where err wraps one,
// reduced to its message: "origin put: version mismatch", not "origin put:
// rpc error: code = FailedPrecondition desc = version mismatch". The code
// travels in the sidecar's own status.
func plain(err error) string {
	var se interface {
		error
		GRPCStatus() *status.Status
	}
	if !errors.As(err, &se) {
		return err.Error()
	}
	return strings.Replace(err.Error(), se.Error(), se.GRPCStatus().Message(), 1)
}
