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
// payload is a view of them, and Encoded returns those bytes as they are,
// to be sent on. Decoding an object so costs three allocations (the object,
// its refs and one copy of its strings) besides the bytes' own, where
// protobuf's costs one per ref and string and the conversion one more.

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
// FromProto would, into an object that keeps b as its Wire and whose
// payload is a view of it: the caller hands b over and must never modify
// it. Fields of an unexpected wire type and unknown fields are skipped, as
// protobuf does, and stay in Wire. The strings (id, type, refs) are views
// of one copy of their own: ids travel on into maps of their own (in-flight
// tables, traversal sets, planners), and must not keep a payload alive.
func Decode(b []byte) (*graph.Object, error) {
	refs, text, err := measure(b)
	if err != nil {
		return nil, err
	}
	d := decoder{o: &graph.Object{Wire: b}, text: make([]byte, 0, text)}
	if refs > 0 {
		d.o.Refs = make([]graph.Ref, 0, refs)
	}
	for rest := b; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		rest = rest[n:]
		switch {
		case num == objectVersion && typ == protowire.VarintType:
			d.o.Version, n = protowire.ConsumeVarint(rest)
		case typ == protowire.BytesType && num >= objectID && num <= objectPayload:
			var v []byte
			if v, n = protowire.ConsumeBytes(rest); n >= 0 {
				err = d.setField(num, v)
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
	return d.o, nil
}

// decoder is one Decode: the object, and the copy its strings are views of.
type decoder struct {
	o    *graph.Object
	text []byte // allocated once, at its final size: views stay valid
	last string // the field of the ref before
}

// field decodes a ref's field: the string of the ref before when it is the
// same, as it is along a list. Those who walk a hub's refs (the planner)
// then compare its thousands of fields by pointer.
func (d *decoder) field(v []byte) (string, error) {
	if len(v) > 0 && string(v) == d.last {
		return d.last, nil
	}
	f, err := d.str(v)
	d.last = f
	return f, err
}

// setField sets the length-delimited field num of the object to v.
func (d *decoder) setField(num protowire.Number, v []byte) (err error) {
	switch num {
	case objectID:
		d.o.ID, err = d.str(v)
	case objectType:
		d.o.Type, err = d.str(v)
	case objectPayload:
		d.o.Payload = v[:len(v):len(v)]
	case objectRefs:
		var r graph.Ref
		if r, err = d.ref(v); err == nil {
			d.o.Refs = append(d.o.Refs, r)
		}
	}
	return err
}

// ref decodes an encoded lookaheadv1.Ref.
func (d *decoder) ref(b []byte) (r graph.Ref, err error) {
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
				r.Field, err = d.field(v)
			} else {
				r.ID, err = d.str(v)
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

// measure counts the refs of an encoded object and bounds the bytes of its
// strings (ids, type, refs), so that its Refs and text are allocated once.
func measure(b []byte) (refs, text int, err error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, 0, protowire.ParseError(n)
		}
		b = b[n:]
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return 0, 0, protowire.ParseError(n)
		}
		if typ == protowire.BytesType && num != objectPayload {
			text += n // the field's bytes and its length: more than its strings
			if num == objectRefs {
				refs++
			}
		}
		b = b[n:]
	}
	return refs, text, nil
}

// str copies v, refused as protobuf refuses a string field that is not
// UTF-8, into the decoder's text and returns it as a string that is a view
// of the copy, which never changes.
func (d *decoder) str(v []byte) (string, error) {
	if !utf8.Valid(v) {
		return "", errInvalidUTF8
	}
	if len(v) == 0 {
		return "", nil
	}
	if len(d.text)+len(v) > cap(d.text) { // beyond what measure counted: cannot be, but a view of moved bytes would be wrong
		return string(v), nil
	}
	at := len(d.text)
	d.text = append(d.text, v...)
	return unsafe.String(&d.text[at], len(v)), nil
}

// Encoded is o encoded as a lookaheadv1.Object: its Wire when it has one
// (not to be modified), otherwise its encoding by proto.Marshal.
func Encoded(o *graph.Object) ([]byte, error) {
	if o.Wire != nil {
		return o.Wire, nil
	}
	return proto.Marshal(ToProto(o))
}
