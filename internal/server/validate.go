package server

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/prefetch"
)

func checkID(name, id string) error {
	switch {
	case id == "":
		return status.Errorf(codes.InvalidArgument, "%s: empty id", name)
	case len(id) > graph.MaxIDBytes:
		return status.Errorf(codes.InvalidArgument, "%s: id of %d bytes exceeds the limit of %d", name, len(id), graph.MaxIDBytes)
	}
	return nil
}

func (s *Server) checkIDs(name string, ids []string) error {
	if len(ids) > s.cfg.MaxIDs {
		return status.Errorf(codes.InvalidArgument, "%s: %d ids exceed the limit of %d per request", name, len(ids), s.cfg.MaxIDs)
	}
	for i, id := range ids {
		switch {
		case id == "":
			return status.Errorf(codes.InvalidArgument, "%s[%d]: empty id", name, i)
		case len(id) > graph.MaxIDBytes:
			return status.Errorf(codes.InvalidArgument, "%s[%d]: id of %d bytes exceeds the limit of %d", name, i, len(id), graph.MaxIDBytes)
		}
	}
	return nil
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
// caller's own deadline and cancellation first, then what the origin said.
func toStatus(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return status.Errorf(codes.DeadlineExceeded, "deadline exceeded: %v", err)
	case errors.Is(err, context.Canceled):
		return status.Errorf(codes.Canceled, "canceled: %v", err)
	}
	st, ok := status.FromError(err)
	if !ok {
		return status.Errorf(codes.Internal, "%v", err)
	}
	switch st.Code() {
	case codes.Unavailable:
		return status.Errorf(codes.Unavailable, "origin unavailable: %v", err)
	case codes.DeadlineExceeded, codes.Canceled, codes.ResourceExhausted,
		codes.NotFound, codes.FailedPrecondition, codes.Aborted, codes.InvalidArgument,
		codes.PermissionDenied, codes.Unauthenticated:
		return status.Error(st.Code(), err.Error())
	}
	return status.Errorf(codes.Internal, "origin: %v", err)
}
