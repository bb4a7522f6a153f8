package server

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
)

// Replies (a Get's, a BatchGet's, each message of a GetGraph stream) are
// encoded here, each object as the bytes it came from the origin in
// (graph.Object.Wire) when it has them, rather than converted to protobuf
// messages and encoded by gRPC: a cold walk then never encodes an object.
// The encoded fields are the reply message's unknown fields, which
// protobuf writes out verbatim, so on the wire it is the message with its
// fields set (the reference origin sends its replies the same way; see
// replies.go for what they hold meanwhile).

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

// resultsSize bounds the bytes of rs encoded as results: each object's
// wire bytes when it has them, else its Size, which is more.
func resultsSize(rs []fetch.Result) int {
	n := 0
	for _, r := range rs {
		if r.Object.Wire != nil {
			n += len(r.Object.Wire) + resultOverhead
		} else {
			n += int(r.Object.Size()) + resultOverhead
		}
	}
	return n
}

// appendResult appends r as one more result, in field results of its
// message, its fields in the order proto.Marshal writes them, zero values
// left out.
func appendResult(b []byte, results protowire.Number, r fetch.Result) ([]byte, error) {
	obj := encodeObject(r.Object)
	status, level := uint64(cacheStatus(r.Status)), uint64(r.Level)
	n := protowire.SizeTag(resultObject) + protowire.SizeBytes(obj.size)
	if status != 0 {
		n += protowire.SizeTag(resultStatus) + protowire.SizeVarint(status)
	}
	if level != 0 {
		n += protowire.SizeTag(resultLevel) + protowire.SizeVarint(level)
	}
	if r.Stale {
		n += protowire.SizeTag(resultStale) + 1
	}
	b = protowire.AppendTag(b, results, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	b = protowire.AppendTag(b, resultObject, protowire.BytesType)
	b, err := obj.append(b)
	if err != nil {
		return nil, err
	}
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

// encodedObject is an object about to be appended to a message: the bytes
// it came from the origin in, or, for one decoded otherwise (a BatchGet's),
// its protobuf message, encoded straight into the message's buffer.
type encodedObject struct {
	wire []byte
	msg  *lookaheadv1.Object
	size int
}

func encodeObject(o *graph.Object) encodedObject {
	if o.Wire != nil {
		return encodedObject{wire: o.Wire, size: len(o.Wire)}
	}
	m := graphpb.ToProto(o)
	return encodedObject{msg: m, size: proto.Size(m)}
}

// append appends the object's length and bytes to b.
func (e encodedObject) append(b []byte) ([]byte, error) {
	b = protowire.AppendVarint(b, uint64(e.size))
	if e.msg == nil {
		return append(b, e.wire...), nil
	}
	return proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(b, e.msg)
}
