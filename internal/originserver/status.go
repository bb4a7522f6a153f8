package originserver

import (
	"context"
	"errors"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/reqcheck"
	"github.com/lookahead-dev/lookahead/internal/store"
)

// checkIDs validates a list of ids and its length against Config.MaxIDs.
func (s *Server) checkIDs(name string, ids []string) error {
	return reqcheck.IDs(name, ids, s.cfg.MaxIDs)
}

// checkObject validates an object to be written.
func checkObject(p *lookaheadv1.Object) error {
	if p == nil {
		return status.Error(codes.InvalidArgument, "object: missing")
	}
	if err := reqcheck.ID("object.id", p.GetId()); err != nil {
		return err
	}
	for i, r := range p.GetRefs() {
		if err := reqcheck.ID("object.refs["+strconv.Itoa(i)+"].id", r.GetId()); err != nil {
			return err
		}
	}
	return nil
}

// toStatus turns an error of the store or of the caller's context into the
// status the client sees.
func toStatus(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return status.FromContextError(err).Err()
	case errors.Is(err, store.ErrVersionMismatch):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, store.ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, graph.ErrEmptyID), errors.Is(err, graph.ErrIDTooLong), errors.Is(err, graph.ErrNilObject):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, store.ErrClosed):
		return status.Error(codes.Unavailable, "origin store closed")
	case errors.Is(err, store.ErrUnavailable):
		return status.Error(codes.Unavailable, err.Error())
	case errors.Is(err, store.ErrCompacted):
		return status.Error(codes.OutOfRange, err.Error())
	case errors.Is(err, store.ErrReadOnly):
		return status.Error(codes.Unimplemented, err.Error())
	case errors.Is(err, store.ErrInvalid):
		return status.Error(codes.InvalidArgument, err.Error())
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Errorf(codes.Internal, "origin store: %v", err)
}
