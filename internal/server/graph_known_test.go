package server

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// A GetGraph over a partly cached tree gets, in one Expand, only what the
// sidecar does not hold: held objects below held ones are named known_ids,
// which the reference origin walks through without sending, and they are
// answered as hits, in breadth-first order with the rest.
func TestGetGraphFetchesOnlyWhatIsNotHeld(t *testing.T) {
	objs := taskTree(t, 1, 5, 4) // 156 objects
	r := newRig(t, objs, rigOptions{engine: modeOff})
	child := objs[0].Refs[1].ID // the root's second child, and its children
	held := map[string]bool{"task-0": true, child: true}
	for _, o := range objs {
		if o.ID == child {
			for _, ref := range o.Refs {
				held[ref.ID] = true
			}
		}
	}
	require.Len(t, held, 7)
	for id := range held {
		_, err := r.client.Get(context.Background(), &lookaheadv1.GetRequest{Id: id})
		require.NoError(t, err)
	}
	before := testutil.ToFloat64(r.m.ObjectsFetched.WithLabelValues("demand"))

	s, err := r.client.GetGraph(context.Background(), &lookaheadv1.GetGraphRequest{Roots: []string{"task-0"}, Depth: u32(10)})
	require.NoError(t, err)
	var got []string
	for {
		resp, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		for _, res := range resp.GetResults() {
			id := res.GetObject().GetId()
			got = append(got, id)
			want := lookaheadv1.CacheStatus_CACHE_STATUS_MISS
			if held[id] {
				want = lookaheadv1.CacheStatus_CACHE_STATUS_HIT
			}
			assert.Equal(t, want, res.GetStatus(), id)
		}
	}
	require.Len(t, got, len(objs))
	for i, o := range objs {
		assert.Equal(t, o.ID, got[i])
	}
	fetched := testutil.ToFloat64(r.m.ObjectsFetched.WithLabelValues("demand")) - before
	assert.Equal(t, float64(len(objs)-len(held)), fetched, "nothing held came again")
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.OriginRoundTrips.WithLabelValues("Expand", "OK")))
}
