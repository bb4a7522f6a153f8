package originserver

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
)

// Replies carry objects as the store holds them: each object's stored wire
// form (a lookaheadv1.Object) is appended, as a length-delimited field, to the
// reply's unknown fields, which protobuf encodes verbatim. On the wire that
// is exactly the reply with its repeated objects set, so every client decodes
// it as usual, but the origin neither decodes nor re-encodes what it sends.
// In this process the reply's Objects and MissingIds stay empty: read them
// after a round trip through the encoding (gRPC, or proto.Marshal then
// proto.Unmarshal).

// encodedStore is a Store that can return objects in their stored wire form
// (store.Store does); the server then sends them without decoding them.
type encodedStore interface {
	// GetEncoded is Get with each object found as an encoded
	// lookaheadv1.Object the caller owns.
	GetEncoded(ids []string) (found [][]byte, missing []string, err error)
}

// EncodedReads reports whether the store sends each object as the bytes it
// holds (encodedStore), or has every object decoded and encoded again: a
// wrapper around a store that hides its GetEncoded costs the origin two
// to three times the CPU per object sent.
func (s *Server) EncodedReads() bool {
	_, ok := s.st.(encodedStore)
	return ok
}

// read returns the wire form of the objects among ids, in request order, and
// the ids missing; with links, also each object's id and refs (for a
// traversal). A store without GetEncoded has its objects encoded here.
func (s *Server) read(ids []string, links bool) (raw [][]byte, objs []*graph.Object, missing []string, err error) {
	es, ok := s.st.(encodedStore)
	if !ok {
		if objs, missing, err = s.st.Get(ids); err != nil {
			return nil, nil, nil, err
		}
		raw = make([][]byte, len(objs))
		for i, o := range objs {
			if raw[i], err = proto.Marshal(graphpb.ToProto(o)); err != nil {
				return nil, nil, nil, fmt.Errorf("encoding object %q: %w", o.ID, err)
			}
		}
		return raw, objs, missing, nil
	}
	if raw, missing, err = es.GetEncoded(ids); err != nil || !links {
		return raw, nil, missing, err
	}
	objs = make([]*graph.Object, len(raw))
	for i, b := range raw {
		if objs[i], err = decodeLinks(b); err != nil {
			return nil, nil, nil, err
		}
	}
	return raw, objs, missing, nil
}

var (
	batchObjects = graphpb.FieldNumber(&lookaheadv1.OriginServiceBatchGetResponse{}, "objects")
	batchMissing = graphpb.FieldNumber(&lookaheadv1.OriginServiceBatchGetResponse{}, "missing_ids")
	expandObject = graphpb.FieldNumber(&lookaheadv1.ExpandResponse{}, "objects")
	expandMissed = graphpb.FieldNumber(&lookaheadv1.ExpandResponse{}, "missing_ids")
	objectID     = graphpb.FieldNumber(&lookaheadv1.Object{}, "id")
	objectRefs   = graphpb.FieldNumber(&lookaheadv1.Object{}, "refs")
	refField     = graphpb.FieldNumber(&lookaheadv1.Ref{}, "field")
	refID        = graphpb.FieldNumber(&lookaheadv1.Ref{}, "id")
)

// appendBytesField appends field num holding b.
func appendBytesField(raw []byte, num protowire.Number, b []byte) []byte {
	raw = protowire.AppendTag(raw, num, protowire.BytesType)
	return protowire.AppendBytes(raw, b)
}

// appendStringField appends field num holding s.
func appendStringField(raw []byte, num protowire.Number, s string) []byte {
	raw = protowire.AppendTag(raw, num, protowire.BytesType)
	return protowire.AppendString(raw, s)
}

// fieldSize is the encoded size of a length-delimited field of n bytes.
func fieldSize(num protowire.Number, n int) int {
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}

// setRaw makes raw the message's encoded fields besides those it has set.
func setRaw(m proto.Message, raw []byte) {
	m.ProtoReflect().SetUnknown(protoreflect.RawFields(raw))
}

// decodeLinks reads the id and refs of a stored object, all a traversal
// needs, skipping its other fields (the payload above all).
func decodeLinks(b []byte) (*graph.Object, error) {
	o := &graph.Object{}
	refs := 0
	if err := eachField(b, func(num protowire.Number, _ []byte) error {
		if num == objectRefs {
			refs++
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("decoding stored object: %w", err)
	}
	if refs > 0 {
		o.Refs = make([]graph.Ref, 0, refs)
	}
	err := eachField(b, func(num protowire.Number, v []byte) error {
		switch num {
		case objectID:
			o.ID = string(v)
		case objectRefs:
			var r graph.Ref
			err := eachField(v, func(num protowire.Number, v []byte) error {
				switch num {
				case refField:
					r.Field = string(v)
				case refID:
					r.ID = string(v)
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("ref: %w", err)
			}
			o.Refs = append(o.Refs, r)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("decoding stored object: %w", err)
	}
	return o, nil
}

// eachField calls fn with the number and contents of every length-delimited
// field of b and skips the others.
func eachField(b []byte, fn func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		if err := fn(num, v); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}
