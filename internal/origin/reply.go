package origin

import (
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/metrics"

	_ "google.golang.org/grpc/encoding/proto" // registers the codec replyCodec wraps
)

// Peak memory of a reply. Decoded, an object costs far more than its wire
// form: a ref of a dozen bytes on the wire becomes a protobuf message, two
// strings and a pointer, over a hundred bytes. Checking sizes only after
// decoding let a 13 MiB reply of one object with a million refs take 176 MiB
// before its refusal. So replies are checked twice before they are decoded:
//
//   - A BatchGet of k ids is received only up to the bytes k objects of at
//     most Config.MaxObjectBytes (and k missing ids) can take: gRPC refuses a
//     longer reply from its length prefix, before reading it.
//   - Every object of a BatchGet or Expand reply is measured on the wire,
//     without copying: the reply is refused when one is larger than
//     Config.MaxObjectBytes, as graph.Object.Size would count it once built,
//     or when its wire form alone is (an object never takes more bytes on the
//     wire than its Size).
//
// What is decoded is then at most a few times its wire size.

// replyCodec is the proto codec for one call's replies, which it checks
// first. It is made per call: refused keeps why a reply was refused, since
// gRPC reports a codec's error as a plain INTERNAL status.
type replyCodec struct {
	proto   encoding.CodecV2
	objects protowire.Number // the reply's field of objects
	limit   int64            // Config.MaxObjectBytes
	refused error            // set by Unmarshal, read after the call returned
}

func (c *Client) newReplyCodec(objects protowire.Number) *replyCodec {
	return &replyCodec{proto: encoding.GetCodecV2("proto"), objects: objects, limit: c.cfg.MaxObjectBytes}
}

func (r *replyCodec) Marshal(v any) (mem.BufferSlice, error) { return r.proto.Marshal(v) }

func (r *replyCodec) Name() string { return r.proto.Name() }

func (r *replyCodec) Unmarshal(data mem.BufferSlice, v any) error {
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	b := buf.ReadOnlyData()
	if m, ok := v.(*expandReply); ok {
		return r.decodeExpand(b, m)
	}
	if err := scanReply(b, r.objects, r.limit); err != nil {
		r.refused = err
		return err
	}
	return proto.Unmarshal(b, v.(proto.Message)) // copies what it keeps: buf goes back to the pool
}

// callOptions are the options of a call whose replies r checks, received
// up to maxRecv bytes (0 = the connection's limit).
func (r *replyCodec) callOptions(maxRecv int) []grpc.CallOption {
	opts := []grpc.CallOption{grpc.ForceCodecV2(r)}
	if maxRecv > 0 {
		opts = append(opts, grpc.MaxCallRecvMsgSize(maxRecv))
	}
	return opts
}

// verdict turns a call's error into the reply's refusal, counted, when the
// codec refused it.
func (r *replyCodec) verdict(c *Client, err error) error {
	if err == nil || r.refused == nil {
		return err
	}
	c.malformed(metrics.MalformedOversized)
	return fmt.Errorf("%w: %w", ErrMalformedReply, r.refused)
}

// batchRecvLimit is the largest BatchGet reply for n ids that can be valid:
// per id an object of at most MaxObjectBytes or a missing id, each with its
// tag and length. It is 0 when that is no tighter than the connection's own
// limit.
func (c *Client) batchRecvLimit(n int) int {
	per := c.cfg.MaxObjectBytes + graph.MaxIDBytes + 2*(1+binaryVarintMax)
	if int64(n) >= int64(c.cfg.MaxMessageBytes)/per {
		return 0
	}
	return n * int(per)
}

// tooLong is the refusal of a BatchGet reply for ids longer than limit.
func (c *Client) tooLong(limit int, ids []string) error {
	if len(ids) == 1 {
		return fmt.Errorf("object %q: reply larger than the %d bytes that an object of at most %d bytes takes (refused before reading it)", ids[0], limit, c.cfg.MaxObjectBytes)
	}
	return fmt.Errorf("reply larger than the %d bytes that %d objects of at most %d bytes take (refused before reading it)", limit, len(ids), c.cfg.MaxObjectBytes)
}

// binaryVarintMax is the length of a varint holding a length up to 2 GiB.
const binaryVarintMax = 5

// overLimit reports whether err is gRPC's refusal of a reply longer than
// a call's receive limit.
func overLimit(err error) bool {
	return status.Code(err) == codes.ResourceExhausted && strings.Contains(status.Convert(err).Message(), "received message larger than max")
}

// scanReply checks every object of a reply, in field objects, on the wire.
// What does not parse is left to proto.Unmarshal to report.
func scanReply(b []byte, objects protowire.Number, limit int64) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		if num == objects && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil
			}
			if err := scanObject(v, limit); err != nil {
				return err
			}
			b = b[n:]
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return nil
		}
		b = b[n:]
	}
	return nil
}

// Field numbers of lookahead.v1.Object and lookahead.v1.Ref.
const (
	objectID      = 1
	objectType    = 3
	objectRefs    = 4
	objectPayload = 5
	refField      = 1
	refID         = 2
)

// scanObject refuses an object (its wire bytes b) that graph.Object.Size
// would find larger than limit, or whose wire form alone is. Like protobuf,
// it takes the last of repeated scalar fields.
func scanObject(b []byte, limit int64) error {
	var id, typeLen, payload, refs int
	var refBytes int64
	var idText []byte // only made a string for an error
	for rest := b; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 {
			return nil
		}
		rest = rest[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, rest); n < 0 {
				return nil
			}
			rest = rest[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(rest)
		if n < 0 {
			return nil
		}
		rest = rest[n:]
		switch num {
		case objectID:
			id, idText = len(v), v[:min(len(v), graph.MaxIDBytes)]
		case objectType:
			typeLen = len(v)
		case objectPayload:
			payload = len(v)
		case objectRefs:
			refs++
			refBytes += refSize(v)
		}
	}
	if size := graph.SizeOf(id+typeLen+payload, refs, refBytes); size > limit {
		return fmt.Errorf("object %q: %d bytes exceed the limit of %d (refused before decoding)", idText, size, limit)
	}
	if int64(len(b)) > limit {
		return fmt.Errorf("object %q: %d bytes on the wire exceed the limit of %d (refused before decoding)", idText, len(b), limit)
	}
	return nil
}

// refSize is the bytes of a ref's field and id.
func refSize(b []byte) int64 {
	var field, id int
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			break
		}
		b = b[n:]
		if typ == protowire.BytesType && (num == refField || num == refID) {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				break
			}
			if num == refField {
				field = len(v)
			} else {
				id = len(v)
			}
			b = b[n:]
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			break
		}
		b = b[n:]
	}
	return int64(field + id)
}
