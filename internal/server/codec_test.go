package server

import (
	"context"
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
	"github.com/lookahead-dev/lookahead/internal/fetch"
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

// A GetGraph message of results encoded as they arrived goes out as the
// bytes it was built of, not a copy, and they are what protobuf would
// send; any other message is protobuf's.
func TestGetGraphMessageIsSentAsItsBytes(t *testing.T) {
	o := &graph.Object{ID: "a", Type: "task", Version: 3, Payload: []byte("p"), Refs: []graph.Ref{{Field: "next", ID: "b"}}}
	m, err := graphMessage([]fetch.Result{{Object: o, Status: fetch.StatusMiss, Level: 1}})
	require.NoError(t, err)
	c := NewRequestCodec()
	got, err := c.Marshal(m)
	require.NoError(t, err)
	raw := m.ProtoReflect().GetUnknown()
	require.Len(t, got, 1)
	assert.Same(t, &raw[0], &got[0].ReadOnlyData()[0], "the message's own bytes, not a copy")
	want, err := proto.Marshal(m)
	require.NoError(t, err)
	assert.Equal(t, want, got.Materialize())

	other := &lookaheadv1.GetGraphResponse{MissingIds: []string{"x"}}
	got, err = c.Marshal(other)
	require.NoError(t, err)
	want, err = proto.Marshal(other)
	require.NoError(t, err)
	assert.Equal(t, want, got.Materialize())
}
