package originserver

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
)

func ids(objs []*lookaheadv1.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetId())
	}
	return out
}

func TestBatchGet(t *testing.T) {
	h := newHarness(t, Config{}, node("a", "f", "b"), node("b"), node("c"))
	tests := []struct {
		name        string
		ids         []string
		wantFound   []string
		wantMissing []string
	}{
		{name: "no ids"},
		{name: "request order", ids: []string{"c", "a", "b"}, wantFound: []string{"c", "a", "b"}},
		{name: "missing listed, not an error", ids: []string{"a", "zz", "b", "yy"}, wantFound: []string{"a", "b"}, wantMissing: []string{"zz", "yy"}},
		{name: "duplicates answered once", ids: []string{"a", "a", "zz", "zz"}, wantFound: []string{"a"}, wantMissing: []string{"zz"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := h.client.BatchGet(testCtx(t), &lookaheadv1.OriginServiceBatchGetRequest{Ids: tc.ids})
			require.NoError(t, err)
			assert.Equal(t, tc.wantFound, ids(resp.GetObjects()))
			assert.Equal(t, tc.wantMissing, resp.GetMissingIds())
		})
	}

	resp, err := h.client.BatchGet(testCtx(t), &lookaheadv1.OriginServiceBatchGetRequest{Ids: []string{"a"}})
	require.NoError(t, err)
	assert.True(t, proto.Equal(graphpb.ToProto(node("a", "f", "b")), resp.GetObjects()[0]), "objects come back whole")

	assert.Equal(t, 5.0, value(t, h.srv.m.requests.WithLabelValues("BatchGet", "OK")))
	assert.Equal(t, 7.0, value(t, h.srv.m.objectsServed.WithLabelValues("BatchGet")))
	assert.Positive(t, value(t, h.srv.m.bytesServed.WithLabelValues("BatchGet")))
}

func TestBatchGetInvalid(t *testing.T) {
	h := newHarness(t, Config{MaxIDs: 3})
	tests := []struct {
		name    string
		ids     []string
		wantMsg string
	}{
		{name: "empty id", ids: []string{"a", ""}, wantMsg: "ids[1]: empty id"},
		{name: "id over 1 KiB", ids: []string{strings.Repeat("x", graph.MaxIDBytes+1)}, wantMsg: "ids[0]: id of 1025 bytes exceeds the limit of 1024"},
		{name: "too many ids", ids: []string{"a", "b", "c", "d"}, wantMsg: "ids: 4 ids exceed the limit of 3 per request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.client.BatchGet(testCtx(t), &lookaheadv1.OriginServiceBatchGetRequest{Ids: tc.ids})
			assert.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			assert.Equal(t, tc.wantMsg, status.Convert(err).Message())
		})
	}
	assert.Equal(t, 3.0, value(t, h.srv.m.requests.WithLabelValues("BatchGet", "InvalidArgument")))

	_, err := h.client.BatchGet(testCtx(t), &lookaheadv1.OriginServiceBatchGetRequest{Ids: []string{"a", "b", "c"}})
	assert.NoError(t, err, "exactly MaxIDs ids are fine")
}

func ptr(v uint64) *uint64 { return &v }

func TestPutDelete(t *testing.T) {
	h := newHarness(t, Config{})
	ctx := testCtx(t)
	put := func(o *graph.Object, expected *uint64) (*lookaheadv1.OriginServicePutResponse, error) {
		return h.client.Put(ctx, &lookaheadv1.OriginServicePutRequest{Object: graphpb.ToProto(o), ExpectedVersion: expected})
	}

	resp, err := put(node("a", "f", "b"), ptr(0))
	require.NoError(t, err)
	assert.Equal(t, uint64(1), resp.GetVersion())
	assert.Equal(t, uint64(1), resp.GetRevision())

	resp, err = put(&graph.Object{ID: "a", Version: 40}, ptr(1))
	require.NoError(t, err)
	assert.Equal(t, uint64(2), resp.GetVersion(), "the request's version is ignored")
	assert.Equal(t, uint64(2), resp.GetRevision())

	_, err = put(node("a"), ptr(1))
	assert.Equal(t, codes.FailedPrecondition, status.Code(err), "%v", err)
	assert.Contains(t, status.Convert(err).Message(), "at version 2, expected 1")

	_, err = put(node("a"), ptr(0))
	assert.Equal(t, codes.FailedPrecondition, status.Code(err), "expected 0: must not exist")

	_, err = h.client.Delete(ctx, &lookaheadv1.OriginServiceDeleteRequest{Id: "a", ExpectedVersion: ptr(1)})
	assert.Equal(t, codes.FailedPrecondition, status.Code(err), "%v", err)

	del, err := h.client.Delete(ctx, &lookaheadv1.OriginServiceDeleteRequest{Id: "a", ExpectedVersion: ptr(2)})
	require.NoError(t, err)
	assert.Equal(t, uint64(3), del.GetRevision())

	_, err = h.client.Delete(ctx, &lookaheadv1.OriginServiceDeleteRequest{Id: "a"})
	assert.Equal(t, codes.NotFound, status.Code(err), "%v", err)

	got, err := h.client.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: []string{"a"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, got.GetMissingIds())
}

func TestWriteInvalid(t *testing.T) {
	h := newHarness(t, Config{})
	long := strings.Repeat("x", graph.MaxIDBytes+1)
	tests := []struct {
		name    string
		call    func() error
		wantMsg string
	}{
		{
			name:    "put without object",
			call:    func() error { _, err := h.client.Put(testCtx(t), &lookaheadv1.OriginServicePutRequest{}); return err },
			wantMsg: "object: missing",
		},
		{
			name: "put empty id",
			call: func() error {
				_, err := h.client.Put(testCtx(t), &lookaheadv1.OriginServicePutRequest{Object: &lookaheadv1.Object{}})
				return err
			},
			wantMsg: "object.id: empty id",
		},
		{
			name: "put long ref id",
			call: func() error {
				_, err := h.client.Put(testCtx(t), &lookaheadv1.OriginServicePutRequest{Object: graphpb.ToProto(node("a", "f", "b", "g", long))})
				return err
			},
			wantMsg: "object.refs[1].id: id of 1025 bytes exceeds the limit of 1024",
		},
		{
			name: "delete empty id",
			call: func() error {
				_, err := h.client.Delete(testCtx(t), &lookaheadv1.OriginServiceDeleteRequest{})
				return err
			},
			wantMsg: "id: empty id",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			assert.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			assert.Equal(t, tc.wantMsg, status.Convert(err).Message())
		})
	}
	assert.Zero(t, h.st.Revision(), "nothing was written")
}
