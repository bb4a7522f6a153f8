package origin

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
)

// expandReply is one message of an Expand stream decoded as
// lookaheadv1.ExpandResponse would be, its objects straight into graph
// objects that keep their encoding (graphpb.Decode): the sidecar sends them
// on to its clients as they came, and decodes each object once, into one
// copy of its bytes, instead of into protobuf messages and then again into
// a graph.Object. The stream's RecvMsg takes it in place of the generated
// message; replyCodec decodes it.
type expandReply struct {
	level   uint32
	objs    []*graph.Object
	missing []string
}

var (
	expandLevel   = graphpb.FieldNumber(&lookaheadv1.ExpandResponse{}, "level")
	expandObjects = graphpb.FieldNumber(&lookaheadv1.ExpandResponse{}, "objects")
	expandMissing = graphpb.FieldNumber(&lookaheadv1.ExpandResponse{}, "missing_ids")
)

// decodeExpand decodes b into m. Every object is first measured on the wire
// (scanObject) and refused, before anything of it is copied, when it is
// larger than the limit. b is the codec's buffer: what m keeps is copied.
func (r *replyCodec) decodeExpand(b []byte, m *expandReply) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		switch {
		case num == expandLevel && typ == protowire.VarintType:
			var v uint64
			v, n = protowire.ConsumeVarint(b)
			m.level = uint32(v)
		case num == expandObjects && typ == protowire.BytesType:
			var v []byte
			if v, n = protowire.ConsumeBytes(b); n >= 0 {
				if err := r.addObject(m, v); err != nil {
					return err
				}
			}
		case num == expandMissing && typ == protowire.BytesType:
			var v []byte
			if v, n = protowire.ConsumeBytes(b); n >= 0 {
				if !utf8.Valid(v) {
					return fmt.Errorf("missing id: string field contains invalid UTF-8")
				}
				m.missing = append(m.missing, string(v))
			}
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
	}
	return nil
}

// addObject checks the encoded object v and adds it to m, decoded from a
// copy of v.
func (r *replyCodec) addObject(m *expandReply, v []byte) error {
	if err := scanObject(v, r.limit); err != nil {
		r.refused = err
		return err
	}
	o, err := graphpb.Decode(bytes.Clone(v))
	if err != nil {
		return fmt.Errorf("object: %w", err)
	}
	m.objs = append(m.objs, o)
	return nil
}
