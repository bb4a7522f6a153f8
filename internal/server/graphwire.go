package server

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
)

// A GetGraph message is encoded here as its results arrive, each object as
// the bytes it came from the origin in (graph.Object.Wire) when it has them,
// rather than converted to protobuf messages and encoded by gRPC: a cold
// walk then never encodes an object. The encoded results are the message's
// unknown fields, which protobuf writes out verbatim, so on the wire it is
// the message with its results set (the reference origin sends its replies
// the same way).

var (
	graphResults = graphpb.FieldNumber(&lookaheadv1.GetGraphResponse{}, "results")
	resultObject = graphpb.FieldNumber(&lookaheadv1.Result{}, "object")
	resultStatus = graphpb.FieldNumber(&lookaheadv1.Result{}, "status")
	resultLevel  = graphpb.FieldNumber(&lookaheadv1.Result{}, "level")
	resultStale  = graphpb.FieldNumber(&lookaheadv1.Result{}, "stale")
)

// resultOverhead bounds what a result adds to its object's bytes: its
// tag and length, and the object's, status's, level's and stale's fields.
const resultOverhead = 24

// graphMessage is the GetGraph message of rs, encoded into one buffer
// sized up front (an object's wire bytes when it has them, else its Size,
// which is more), so that it is not grown and copied result by result.
func graphMessage(rs []fetch.Result) (*lookaheadv1.GetGraphResponse, error) {
	n := 0
	for _, r := range rs {
		if r.Object.Wire != nil {
			n += len(r.Object.Wire) + resultOverhead
		} else {
			n += int(r.Object.Size()) + resultOverhead
		}
	}
	raw := make([]byte, 0, n)
	for _, r := range rs {
		var err error
		if raw, err = appendResult(raw, r); err != nil {
			return nil, status.Errorf(codes.Internal, "encoding object %q: %v", r.Object.ID, err)
		}
	}
	m := &lookaheadv1.GetGraphResponse{}
	m.ProtoReflect().SetUnknown(protoreflect.RawFields(raw))
	return m, nil
}

// appendResult appends r as one more result, its fields in the order
// proto.Marshal writes them, zero values left out.
func appendResult(b []byte, r fetch.Result) ([]byte, error) {
	obj, err := graphpb.Encoded(r.Object)
	if err != nil {
		return nil, err
	}
	status, level := uint64(cacheStatus(r.Status)), uint64(r.Level)
	n := protowire.SizeTag(resultObject) + protowire.SizeBytes(len(obj))
	if status != 0 {
		n += protowire.SizeTag(resultStatus) + protowire.SizeVarint(status)
	}
	if level != 0 {
		n += protowire.SizeTag(resultLevel) + protowire.SizeVarint(level)
	}
	if r.Stale {
		n += protowire.SizeTag(resultStale) + 1
	}
	b = protowire.AppendTag(b, graphResults, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	b = protowire.AppendTag(b, resultObject, protowire.BytesType)
	b = protowire.AppendBytes(b, obj)
	if status != 0 {
		b = protowire.AppendTag(b, resultStatus, protowire.VarintType)
		b = protowire.AppendVarint(b, status)
	}
	if level != 0 {
		b = protowire.AppendTag(b, resultLevel, protowire.VarintType)
		b = protowire.AppendVarint(b, level)
	}
	if r.Stale {
		b = protowire.AppendTag(b, resultStale, protowire.VarintType)
		b = protowire.AppendVarint(b, 1)
	}
	return b, nil
}
