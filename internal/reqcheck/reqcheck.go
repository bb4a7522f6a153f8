// Package reqcheck validates the ids of a gRPC request the same way in the
// sidecar and the reference origin, answering INVALID_ARGUMENT with a
// message that names the field at fault.
package reqcheck

import (
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// ID validates one id of a request; name says where it was ("id",
// "object.refs[2].id").
func ID(name, id string) error {
	switch {
	case id == "":
		return status.Errorf(codes.InvalidArgument, "%s: empty id", name)
	case len(id) > graph.MaxIDBytes:
		return status.Errorf(codes.InvalidArgument, "%s: id of %d bytes exceeds the limit of %d", name, len(id), graph.MaxIDBytes)
	}
	return nil
}

// IDs validates a list of ids and its length against max: the first bad id
// is named by its index ("ids[3]").
func IDs(name string, ids []string, max int) error {
	if len(ids) > max {
		return status.Errorf(codes.InvalidArgument, "%s: %d ids exceed the limit of %d per request", name, len(ids), max)
	}
	for i, id := range ids {
		if graph.ValidateID(id) != nil {
			return ID(name+"["+strconv.Itoa(i)+"]", id)
		}
	}
	return nil
}
