package server

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Decoded, a list of ids costs many times its wire form: an id of one byte
// takes three on the wire, and a string header, an allocation and its share
// of a growing slice once decoded (a BatchGet of a million such ids, 3 MB,
// made the sidecar allocate 92 MB before --max-ids refused it). So the
// length of every list of strings of a request (ids, roots, fields, a
// hint's fields) is counted on the wire, and a request with one longer than
// --max-ids is refused before it is decoded.

// longList returns the INVALID_ARGUMENT status of a request, data, with a
// list of strings longer than c.maxList, or nil. A message too short to
// hold such a list is not looked at.
func (c *RequestCodec) longList(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if c.maxList <= 0 || !ok || data.Len() < 2*(c.maxList+1) {
		return nil // every entry takes two bytes at least: a tag and a length
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return longList(buf.ReadOnlyData(), m.ProtoReflect().Descriptor(), c.maxList, "")
}

// longList checks the lists of strings of b, an encoded md, and of the
// messages it holds, against max; prefix names the message in the error.
// What does not parse is left to the decoder to report.
func longList(b []byte, md protoreflect.MessageDescriptor, max int, prefix string) error {
	fields := md.Fields()
	var counts []int // by field index, made at the first list entry
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		fd := fields.ByNumber(num)
		if fd == nil || typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return nil
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		switch {
		case fd.IsList() && fd.Kind() == protoreflect.StringKind:
			if counts == nil {
				counts = make([]int, fields.Len())
			}
			counts[fd.Index()]++
		case fd.Kind() == protoreflect.MessageKind && !fd.IsMap():
			if err := longList(v, fd.Message(), max, prefix+string(fd.Name())+"."); err != nil {
				return err
			}
		}
	}
	for i, n := range counts {
		if n > max {
			name := fields.Get(i).Name()
			noun := "ids"
			if name == "fields" {
				noun = "fields"
			}
			return status.Errorf(codes.InvalidArgument, "%s%s: %d %s exceed the limit of %d per request", prefix, name, n, noun, max)
		}
	}
	return nil
}
