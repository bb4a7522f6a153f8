package origin_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/metrics"
	"github.com/lookahead-dev/lookahead/internal/metrics/wire"
	"github.com/lookahead-dev/lookahead/internal/origin"
)

const maxObject = 2000 // bytes, the rig's Config.MaxObjectBytes

func obj(id string, payload string, refs ...string) *lookaheadv1.Object {
	o := &lookaheadv1.Object{Id: id, Version: 1, Type: "T", Payload: []byte(payload)}
	for _, r := range refs {
		o.Refs = append(o.Refs, &lookaheadv1.Ref{Field: "next", Id: r})
	}
	return o
}

var huge = strings.Repeat("x", maxObject)

// malformed returns the problem counts of the rig, leaving out zeros.
func malformed(m *metrics.Set) map[string]float64 {
	out := map[string]float64{}
	for _, p := range metrics.MalformedProblems {
		if v := testutil.ToFloat64(m.OriginMalformed.WithLabelValues(p)); v != 0 {
			out[p] = v
		}
	}
	return out
}

// TestBatchGetMalformedReplies feeds the client each malformed BatchGet
// reply for the ids a and b.
func TestBatchGetMalformedReplies(t *testing.T) {
	tests := []struct {
		name        string
		objects     []*lookaheadv1.Object
		missing     []string
		wantFound   []string
		wantPayload map[string]string // id → payload, where it matters
		wantMissing []string
		wantErr     string
		wantIs      error // the sentinel wantErr matches; nil = origin.ErrMalformedReply
		wantCounts  map[string]float64
	}{
		{name: "well formed", objects: []*lookaheadv1.Object{obj("a", "A")}, missing: []string{"b"},
			wantFound: []string{"a"}, wantMissing: []string{"b"}, wantCounts: map[string]float64{}},
		{name: "duplicate object: the first copy is kept",
			objects:   []*lookaheadv1.Object{obj("a", "first"), obj("b", "B"), obj("a", "second")},
			wantFound: []string{"a", "b"}, wantPayload: map[string]string{"a": "first"},
			wantCounts: map[string]float64{metrics.MalformedDuplicate: 1}},
		{name: "object not asked for is dropped",
			objects:    []*lookaheadv1.Object{obj("a", "A"), obj("x", "X"), obj("b", "B")},
			wantFound:  []string{"a", "b"},
			wantCounts: map[string]float64{metrics.MalformedUnrequested: 1}},
		{name: "object with an empty id is dropped",
			objects:    []*lookaheadv1.Object{obj("", "?"), obj("a", "A"), obj("b", "B")},
			wantFound:  []string{"a", "b"},
			wantCounts: map[string]float64{metrics.MalformedInvalidID: 1}},
		{name: "object with a too long id is dropped",
			objects:    []*lookaheadv1.Object{obj(strings.Repeat("i", graph.MaxIDBytes+1), "?"), obj("a", "A"), obj("b", "B")},
			wantFound:  []string{"a", "b"},
			wantCounts: map[string]float64{metrics.MalformedInvalidID: 1}},
		{name: "a self-reference is legal, not malformed",
			objects:   []*lookaheadv1.Object{obj("a", "A", "a"), obj("b", "B", "b", "a")},
			wantFound: []string{"a", "b"}, wantCounts: map[string]float64{}},
		{name: "an asked-for object with a ref to an empty id fails the call",
			objects:    []*lookaheadv1.Object{obj("a", "A", ""), obj("b", "B")},
			wantErr:    `origin reply malformed: object "a": ref 0 (next): graph: empty id`,
			wantCounts: map[string]float64{metrics.MalformedInvalidRef: 1}},
		{name: "an oversized asked-for object fails the call",
			objects:    []*lookaheadv1.Object{obj("a", "A"), obj("b", huge)},
			wantErr:    `origin reply malformed: object "b": 2098 bytes exceed the limit of 2000 (refused before decoding)`,
			wantCounts: map[string]float64{metrics.MalformedOversized: 1}},
		{name: "an oversized object fails the call even when not asked for: it is refused before decoding",
			objects:    []*lookaheadv1.Object{obj("a", "A"), obj("b", "B"), obj("x", huge)},
			wantErr:    `origin reply malformed: object "x": 2098 bytes exceed the limit of 2000 (refused before decoding)`,
			wantCounts: map[string]float64{metrics.MalformedOversized: 1}},
		{name: "an id sent as an object and as missing: the object wins",
			objects: []*lookaheadv1.Object{obj("a", "A"), obj("b", "B")}, missing: []string{"a"},
			wantFound: []string{"a", "b"}, wantCounts: map[string]float64{metrics.MalformedConflict: 1}},
		{name: "a missing id not asked for is dropped, never remembered as absent",
			objects: []*lookaheadv1.Object{obj("a", "A")}, missing: []string{"b", "x", ""},
			wantFound: []string{"a"}, wantMissing: []string{"b"},
			wantCounts: map[string]float64{metrics.MalformedUnrequested: 2}},
		{name: "a missing id sent twice is reported once",
			objects: []*lookaheadv1.Object{obj("a", "A")}, missing: []string{"b", "b"},
			wantFound: []string{"a"}, wantMissing: []string{"b"},
			wantCounts: map[string]float64{metrics.MalformedDuplicate: 1}},
		{name: "an id left unanswered fails the call: its absence was never said",
			objects:    []*lookaheadv1.Object{obj("a", "A")},
			wantIs:     origin.ErrIncompleteReply,
			wantErr:    `origin reply incomplete: 1 asked id neither sent nor listed missing: "b"`,
			wantCounts: map[string]float64{metrics.MalformedUnanswered: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, &fakeOrigin{batchGet: func(_ int, _ *lookaheadv1.OriginServiceBatchGetRequest) (*lookaheadv1.OriginServiceBatchGetResponse, error) {
				return &lookaheadv1.OriginServiceBatchGetResponse{Objects: tt.objects, MissingIds: tt.missing}, nil
			}}, origin.Config{MaxObjectBytes: maxObject})
			found, missing, err := r.client.BatchGet(context.Background(), []string{"a", "b"})
			assert.Equal(t, tt.wantCounts, malformed(r.m))
			if tt.wantErr != "" {
				if tt.wantIs == nil {
					tt.wantIs = origin.ErrMalformedReply
				}
				require.ErrorIs(t, err, tt.wantIs)
				assert.ErrorContains(t, err, tt.wantErr)
				assert.Nil(t, found, "nothing of a malformed reply is returned")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantFound, graph.IDs(found))
			assert.Equal(t, tt.wantMissing, missing)
			for _, o := range found {
				if p, ok := tt.wantPayload[o.ID]; ok {
					assert.Equal(t, p, string(o.Payload), o.ID)
				}
			}
		})
	}
}

// level is one Expand message.
type level struct {
	n       uint32
	objects []*lookaheadv1.Object
	missing []string
}

// TestExpandMalformedReplies feeds the client each malformed Expand stream
// below root r (r → c1, c2).
func TestExpandMalformedReplies(t *testing.T) {
	root := obj("r", "R", "c1", "c2")
	tests := []struct {
		name       string
		fields     []string
		known      []*graph.Object // held by the caller: never sent, their refs expected
		stream     []level
		want       [][]string // ids handed to fn, per message
		wantErr    string
		wantCounts map[string]float64
	}{
		{name: "well formed", stream: []level{{0, []*lookaheadv1.Object{root}, nil}, {1, []*lookaheadv1.Object{obj("c1", "1")}, []string{"c2"}}},
			want: [][]string{{"r"}, {"c1"}}, wantCounts: map[string]float64{}},
		{name: "an object twice, across messages",
			stream: []level{{0, []*lookaheadv1.Object{root}, nil}, {1, []*lookaheadv1.Object{obj("c1", "1"), obj("r", "again")}, nil}},
			want:   [][]string{{"r"}, {"c1"}}, wantCounts: map[string]float64{metrics.MalformedDuplicate: 1}},
		{name: "an object no accepted object refers to",
			stream: []level{{0, []*lookaheadv1.Object{root, obj("x", "X")}, nil}, {1, []*lookaheadv1.Object{obj("c1", "1"), obj("y", "Y")}, nil}},
			want:   [][]string{{"r"}, {"c1"}}, wantCounts: map[string]float64{metrics.MalformedUnrequested: 2}},
		{name: "refs outside the requested fields are not followed", fields: []string{"other"},
			stream: []level{{0, []*lookaheadv1.Object{root}, nil}, {1, []*lookaheadv1.Object{obj("c1", "1")}, nil}},
			want:   [][]string{{"r"}, {}}, wantCounts: map[string]float64{metrics.MalformedUnrequested: 1}},
		{name: "refs of objects at the requested depth are not followed",
			stream: []level{{0, []*lookaheadv1.Object{root}, nil}, {1, []*lookaheadv1.Object{obj("c1", "1", "g")}, nil},
				{2, []*lookaheadv1.Object{obj("g", "G", "h")}, nil}, {2, []*lookaheadv1.Object{obj("h", "H")}, nil}},
			want: [][]string{{"r"}, {"c1"}, {"g"}, {}}, wantCounts: map[string]float64{metrics.MalformedUnrequested: 1}},
		{name: "an empty id",
			stream: []level{{0, []*lookaheadv1.Object{root, obj("", "?")}, nil}},
			want:   [][]string{{"r"}}, wantCounts: map[string]float64{metrics.MalformedInvalidID: 1}},
		{name: "a self-reference is legal",
			stream: []level{{0, []*lookaheadv1.Object{obj("r", "R", "r", "c1")}, nil}, {1, []*lookaheadv1.Object{obj("c1", "1", "c1")}, nil}},
			want:   [][]string{{"r"}, {"c1"}}, wantCounts: map[string]float64{}},
		{name: "missing ids nobody refers to, twice, or also sent",
			stream:     []level{{0, []*lookaheadv1.Object{root}, nil}, {1, []*lookaheadv1.Object{obj("c1", "1")}, []string{"c2", "c2", "x", "c1"}}},
			want:       [][]string{{"r"}, {"c1"}},
			wantCounts: map[string]float64{metrics.MalformedDuplicate: 1, metrics.MalformedUnrequested: 1, metrics.MalformedConflict: 1}},
		{name: "objects below a known object are expected", known: []*graph.Object{{ID: "k", Refs: []graph.Ref{{Field: "next", ID: "k1"}}}},
			stream: []level{{0, []*lookaheadv1.Object{obj("r", "R", "k")}, nil}, {2, []*lookaheadv1.Object{obj("k1", "1")}, nil}},
			want:   [][]string{{"r"}, {"k1"}}, wantCounts: map[string]float64{}},
		{name: "a known object sent anyway is a duplicate", known: []*graph.Object{{ID: "k"}},
			stream: []level{{0, []*lookaheadv1.Object{obj("r", "R", "k")}, nil}, {1, []*lookaheadv1.Object{obj("k", "K")}, nil}},
			want:   [][]string{{"r"}, {}}, wantCounts: map[string]float64{metrics.MalformedDuplicate: 1}},
		{name: "an empty message for each level is legal",
			stream: []level{{0, nil, nil}, {0, []*lookaheadv1.Object{root}, nil}, {1, nil, nil}, {1, []*lookaheadv1.Object{obj("c1", "1")}, []string{"c2"}}, {2, nil, nil}},
			want:   [][]string{{}, {"r"}, {}, {"c1"}, {}}, wantCounts: map[string]float64{}},
		{name: "empty messages past one for each level end the stream",
			stream: []level{{0, []*lookaheadv1.Object{root}, nil}, {1, nil, nil}, {1, nil, nil}, {1, nil, nil}, {1, nil, nil}, {1, nil, nil}},
			want:   [][]string{{"r"}, {}, {}, {}}, wantErr: "origin reply malformed: expand stream sent 4 messages with neither objects nor missing ids, more than one for each of the 3 levels of its depth 2",
			wantCounts: map[string]float64{metrics.MalformedEmpty: 1}},
		{name: "without max_objects, answers that cannot be used may not outnumber those that can",
			stream: []level{{0, []*lookaheadv1.Object{root, obj("x", "X")}, nil}, {1, []*lookaheadv1.Object{obj("c1", "1"), obj("y", "Y"), obj("r", "again")}, nil},
				{1, nil, []string{"c2"}}},
			want: [][]string{{"r"}}, wantErr: "origin reply malformed: expand stream without max_objects answered 5 ids of which 3 could not be used (unrequested, duplicates, conflicts, invalid ids), more than the 2 that could",
			wantCounts: map[string]float64{metrics.MalformedUnrequested: 2, metrics.MalformedDuplicate: 1, metrics.MalformedFlood: 1}},
		{name: "with known ids, whose refs may have changed at the origin, reading stops there instead",
			known: []*graph.Object{{ID: "k", Refs: []graph.Ref{{Field: "next", ID: "k1"}}}},
			stream: []level{{0, []*lookaheadv1.Object{obj("r", "R", "k")}, nil}, {2, []*lookaheadv1.Object{obj("n1", "1"), obj("n2", "2")}, nil},
				{2, []*lookaheadv1.Object{obj("k1", "K1")}, nil}},
			want: [][]string{{"r"}, {}}, wantCounts: map[string]float64{metrics.MalformedUnrequested: 2}},
		{name: "an oversized object ends the stream; earlier levels stand",
			stream: []level{{0, []*lookaheadv1.Object{root}, nil}, {1, []*lookaheadv1.Object{obj("c1", "1"), obj("c2", huge)}, nil}},
			want:   [][]string{{"r"}}, wantErr: `origin reply malformed: object "c2": 2099 bytes exceed the limit of 2000 (refused before decoding)`,
			wantCounts: map[string]float64{metrics.MalformedOversized: 1}},
		{name: "an object with an invalid ref ends the stream",
			stream: []level{{0, []*lookaheadv1.Object{obj("r", "R", strings.Repeat("i", graph.MaxIDBytes+1))}, nil}},
			want:   nil, wantErr: `origin reply malformed: object "r": ref 0 (next): graph: id longer than 1024 bytes`,
			wantCounts: map[string]float64{metrics.MalformedInvalidRef: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, &fakeOrigin{expand: func(_ int, req *lookaheadv1.ExpandRequest, send func(*lookaheadv1.ExpandResponse) error) error {
				if !assert.ElementsMatch(t, graph.IDs(tt.known), req.GetKnownIds()) {
					return nil
				}
				for _, l := range tt.stream {
					if err := send(&lookaheadv1.ExpandResponse{Level: l.n, Objects: l.objects, MissingIds: l.missing}); err != nil {
						return err
					}
				}
				return nil
			}}, origin.Config{MaxObjectBytes: maxObject})
			var got [][]string
			err := r.client.Expand(context.Background(), []string{"r"}, tt.known, graph.Budget{Depth: 2, Fields: tt.fields},
				func(_ int, objs []*graph.Object, _ []string) error {
					got = append(got, graph.IDs(objs))
					return nil
				})
			assert.Equal(t, tt.wantCounts, malformed(r.m))
			assert.Equal(t, tt.want, got)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, origin.ErrMalformedReply)
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
		})
	}
}

// TestMalformedRepliesNeverReachTheCache runs the prefetch engine and the
// cache on a client whose origin misbehaves, and reads the cache after.
func TestMalformedRepliesNeverReachTheCache(t *testing.T) {
	replies := map[string]*lookaheadv1.OriginServiceBatchGetResponse{
		"dup":     {Objects: []*lookaheadv1.Object{obj("dup", "first"), obj("dup", "second")}},
		"extra":   {Objects: []*lookaheadv1.Object{obj("extra", "E"), obj("intruder", "forged")}, MissingIds: []string{"ghost"}},
		"big":     {Objects: []*lookaheadv1.Object{obj("big", huge)}},
		"silent":  {},
		"self":    {Objects: []*lookaheadv1.Object{obj("self", "S", "self")}},
		"badref":  {Objects: []*lookaheadv1.Object{obj("badref", "B", "")}},
		"emptyid": {Objects: []*lookaheadv1.Object{obj("", "?")}, MissingIds: []string{"emptyid"}},
	}
	r := newRig(t, &fakeOrigin{batchGet: func(_ int, req *lookaheadv1.OriginServiceBatchGetRequest) (*lookaheadv1.OriginServiceBatchGetResponse, error) {
		return replies[req.GetIds()[0]], nil
	}}, origin.Config{MaxObjectBytes: maxObject})
	c, err := cache.New(cache.Config{}, wire.Cache(r.m))
	require.NoError(t, err)
	defer c.Close()
	f, err := fetch.New(fetch.Config{}, r.client, c)
	require.NoError(t, err)

	tests := []struct {
		id          string
		wantPayload string // "" = not found
		wantErr     error
	}{
		{id: "dup", wantPayload: "first"},
		{id: "extra", wantPayload: "E"},
		{id: "big", wantErr: origin.ErrMalformedReply},
		{id: "silent", wantErr: origin.ErrIncompleteReply},
		{id: "self", wantPayload: "S"},
		{id: "badref", wantErr: origin.ErrMalformedReply},
		{id: "emptyid"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			var rs []fetch.Result
			a, err := f.Get(context.Background(), []string{tt.id})
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
				rs = a.Results
			}
			if tt.wantPayload != "" {
				require.Len(t, rs, 1)
				assert.Equal(t, tt.wantPayload, string(rs[0].Object.Payload))
			} else {
				assert.Empty(t, rs)
			}
		})
	}
	// What the cache holds now: only what the origin was asked for and
	// answered well, as first sent; no absence it did not state.
	for id, want := range map[string]string{"dup": "first", "extra": "E", "self": "S"} {
		o, known := c.Peek(id)
		require.True(t, known, id)
		require.NotNil(t, o, id)
		assert.True(t, bytes.Equal([]byte(want), o.Payload), id)
	}
	for _, id := range []string{"intruder", "ghost", "big", "silent", "badref", ""} {
		_, known := c.Peek(id)
		assert.False(t, known, "%q must be neither cached nor remembered as absent", id)
	}
	o, known := c.Peek("emptyid")
	assert.True(t, known && o == nil, "emptyid was stated missing: remembered as absent")
}
