package server

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

// rawCodec sends and receives bytes as they are: a client that can send
// what no protobuf library would encode.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }

// stringField is a message whose field n is the string s, bytes as given.
func stringField(n protowire.Number, s string) []byte {
	return protowire.AppendString(protowire.AppendTag(nil, n, protowire.BytesType), s)
}

func TestUndecodableRequestIsInvalidArgument(t *testing.T) {
	r := newHostileRig(t, origintest.New(&graph.Object{ID: "a", Version: 1}), origin.Config{})
	ctx := context.Background()
	raw := grpc.ForceCodecV2(rawCodec{})
	tests := []struct {
		name    string
		req     []byte
		stream  bool
		method  string
		wantMsg string
	}{
		{name: "Get, invalid UTF-8 in id", method: "Get", req: stringField(1, "a\xff"), wantMsg: "invalid UTF-8"},
		{name: "GetGraph, invalid UTF-8 in a root", method: "GetGraph", stream: true, req: stringField(1, "\xc3\x28"), wantMsg: "invalid UTF-8"},
		{name: "Get, truncated message", method: "Get", req: stringField(1, "abc")[:3], wantMsg: "request: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			full := "/" + lookaheadv1.SidecarService_ServiceDesc.ServiceName + "/" + tt.method
			var err error
			if tt.stream {
				var s grpc.ClientStream
				s, err = r.cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, full, raw)
				require.NoError(t, err)
				require.NoError(t, s.SendMsg(&tt.req))
				require.NoError(t, s.CloseSend())
				var out []byte
				err = s.RecvMsg(&out)
			} else {
				var out []byte
				err = r.cc.Invoke(ctx, full, &tt.req, &out, raw)
			}
			assert.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			assert.Contains(t, status.Convert(err).Message(), tt.wantMsg)
		})
	}
	assert.Equal(t, 2.0, handled(t, r.reg, "Get", codes.InvalidArgument), "counted like any bad request")

	// Well-formed requests still decode, through the same codec.
	resp, err := r.client.Get(ctx, &lookaheadv1.GetRequest{Id: "a"})
	require.NoError(t, err)
	assert.Equal(t, "a", resp.GetObject().GetId())
	assert.Zero(t, r.codec.pending(), "nothing left behind")
}

// TestLongListsAreRefusedBeforeDecoding: a request whose list of ids,
// roots or fields (a hint's too) is longer than --max-ids is refused
// INVALID_ARGUMENT naming the list, its length and the limit, before it is
// decoded: a million one-byte ids (3 MB) cost the codec a few allocations,
// not a million strings. A list at the limit is decoded.
func TestLongListsAreRefusedBeforeDecoding(t *testing.T) {
	const limit = 1000
	many := func(n int) []string {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = "a"
		}
		return ids
	}
	c := NewRequestCodec(limit)
	for _, tt := range []struct {
		req     proto.Message
		into    proto.Message
		wantMsg string // "" = decoded
	}{
		{&lookaheadv1.BatchGetRequest{Ids: many(1_000_000)}, &lookaheadv1.BatchGetRequest{}, "ids: 1000000 ids exceed the limit of 1000 per request"},
		{&lookaheadv1.BatchGetRequest{Ids: many(limit)}, &lookaheadv1.BatchGetRequest{}, ""},
		{&lookaheadv1.GetGraphRequest{Roots: []string{"r"}, Fields: many(limit + 1)}, &lookaheadv1.GetGraphRequest{}, "fields: 1001 fields exceed the limit of 1000 per request"},
		{&lookaheadv1.GetRequest{Id: "a", Hint: &lookaheadv1.PrefetchHint{Fields: many(5000)}}, &lookaheadv1.GetRequest{}, "hint.fields: 5000 fields exceed the limit of 1000 per request"},
		{&lookaheadv1.InvalidateRequest{Ids: many(limit + 1)}, &lookaheadv1.InvalidateRequest{}, "ids: 1001 ids exceed the limit of 1000 per request"},
	} {
		b, err := proto.Marshal(tt.req)
		require.NoError(t, err)
		data := mem.BufferSlice{mem.SliceBuffer(b)}
		allocs := testing.AllocsPerRun(1, func() { require.NoError(t, c.Unmarshal(data, tt.into)) })
		err = c.take(tt.into)
		if tt.wantMsg == "" {
			require.NoError(t, err)
			assert.True(t, proto.Equal(tt.req, tt.into))
			continue
		}
		assert.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
		assert.Equal(t, tt.wantMsg, status.Convert(err).Message())
		assert.Less(t, allocs, 50.0, "%s: refused before it was decoded", tt.wantMsg)
	}
	assert.Zero(t, c.pending())
}

// BenchmarkLongList measures what receiving a BatchGet of a million
// one-byte ids (3 MB) costs the codec with the list limit (1000, refused
// before decoding) and without it (0, decoded whole, as before the limit;
// the handler then refused it).
func BenchmarkLongList(b *testing.B) {
	ids := make([]string, 1_000_000)
	for i := range ids {
		ids[i] = "a"
	}
	raw, err := proto.Marshal(&lookaheadv1.BatchGetRequest{Ids: ids})
	require.NoError(b, err)
	data := mem.BufferSlice{mem.SliceBuffer(raw)}
	for _, limit := range []int{1000, 0} {
		b.Run(fmt.Sprintf("max-ids=%d", limit), func(b *testing.B) {
			c := NewRequestCodec(limit)
			b.ReportAllocs()
			for b.Loop() {
				var req lookaheadv1.BatchGetRequest
				_ = c.Unmarshal(data, &req)
				_ = c.take(&req)
			}
		})
	}
}
