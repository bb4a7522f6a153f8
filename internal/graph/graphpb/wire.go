package graphpb

import (
	"errors"
	"fmt"
	"unicode/utf8"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// An object received encoded and sent on unchanged need not be decoded into
// protobuf messages nor encoded again: Decode builds the graph.Object
// straight from its bytes, which it keeps (graph.Object.Wire) and whose
// strings and payload are views of them, and Encoded returns those bytes as
// they are, to be sent on. Decoding an object so costs two allocations (the object and
// its refs) besides the bytes' own, where protobuf's costs one per ref and
// string and the conversion one more per object.

// FieldNumber is the number of a message's field, read from its descriptor
// so that a renumbered proto cannot go unnoticed; it panics if the field
// does not exist.
func FieldNumber(m proto.Message, name protoreflect.Name) protowire.Number {
	f := m.ProtoReflect().Descriptor().Fields().ByName(name)
	if f == nil {
		panic(fmt.Sprintf("graphpb: %s has no field %s", m.ProtoReflect().Descriptor().FullName(), name))
	}
	return f.Number()
}

var (
	objectID      = FieldNumber(&lookaheadv1.Object{}, "id")
	objectVersion = FieldNumber(&lookaheadv1.Object{}, "version")
	objectType    = FieldNumber(&lookaheadv1.Object{}, "type")
	objectRefs    = FieldNumber(&lookaheadv1.Object{}, "refs")
	objectPayload = FieldNumber(&lookaheadv1.Object{}, "payload")
	refField      = FieldNumber(&lookaheadv1.Ref{}, "field")
	refID         = FieldNumber(&lookaheadv1.Ref{}, "id")
)

// errInvalidUTF8 is a string field that protobuf would refuse to decode.
var errInvalidUTF8 = errors.New("string field contains invalid UTF-8")

// Decode decodes b, an encoded lookaheadv1.Object, as proto.Unmarshal and
// FromProto would, into an object that keeps b as its Wire: the caller
// hands b over and must never modify it. Fields of an unexpected wire type
// and unknown fields are skipped, as protobuf does, and stay in Wire.
func Decode(b []byte) (*graph.Object, error) {
	o := &graph.Object{Wire: b}
	refs, err := countRefs(b)
	if err != nil {
		return nil, err
	}
	if refs > 0 {
		o.Refs = make([]graph.Ref, 0, refs)
	}
	for rest := b; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		rest = rest[n:]
		switch {
		case num == objectVersion && typ == protowire.VarintType:
			o.Version, n = protowire.ConsumeVarint(rest)
		case typ == protowire.BytesType && num >= objectID && num <= objectPayload:
			var v []byte
			if v, n = protowire.ConsumeBytes(rest); n >= 0 {
				err = setField(o, num, v)
			}
		default:
			n = protowire.ConsumeFieldValue(num, typ, rest)
		}
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		if err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	return o, nil
}

// setField sets the length-delimited field num of o to v.
func setField(o *graph.Object, num protowire.Number, v []byte) (err error) {
	switch num {
	case objectID:
		o.ID, err = view(v)
	case objectType:
		o.Type, err = view(v)
	case objectPayload:
		o.Payload = v[:len(v):len(v)]
	case objectRefs:
		var r graph.Ref
		if r, err = decodeRef(v); err == nil {
			o.Refs = append(o.Refs, r)
		}
	}
	return err
}

// decodeRef decodes an encoded lookaheadv1.Ref.
func decodeRef(b []byte) (r graph.Ref, err error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return r, protowire.ParseError(n)
		}
		b = b[n:]
		if typ == protowire.BytesType && (num == refField || num == refID) {
			var v []byte
			if v, n = protowire.ConsumeBytes(b); n < 0 {
				return r, protowire.ParseError(n)
			}
			if num == refField {
				r.Field, err = view(v)
			} else {
				r.ID, err = view(v)
			}
			if err != nil {
				return r, err
			}
		} else if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return r, protowire.ParseError(n)
		}
		b = b[n:]
	}
	return r, nil
}

// countRefs counts the refs of an encoded object, so that its Refs are
// allocated once.
func countRefs(b []byte) (int, error) {
	refs := 0
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, protowire.ParseError(n)
		}
		b = b[n:]
		if num == objectRefs && typ == protowire.BytesType {
			refs++
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return 0, protowire.ParseError(n)
		}
		b = b[n:]
	}
	return refs, nil
}

// view is v as a string without copying it, refused as protobuf refuses a
// string field that is not UTF-8. v must never change: Decode's caller
// owns the bytes and promises that.
func view(v []byte) (string, error) {
	if !utf8.Valid(v) {
		return "", errInvalidUTF8
	}
	if len(v) == 0 {
		return "", nil
	}
	return unsafe.String(unsafe.SliceData(v), len(v)), nil
}

// Encoded is o encoded as a lookaheadv1.Object: its Wire when it has one
// (not to be modified), otherwise its encoding by proto.Marshal.
func Encoded(o *graph.Object) ([]byte, error) {
	if o.Wire != nil {
		return o.Wire, nil
	}
	return proto.Marshal(ToProto(o))
}
