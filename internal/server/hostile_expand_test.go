package server

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/metrics"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

// TestExpandFloodIsCutAtMaxObjects: an origin answers a GetGraph's Expand
// with an endless tree, every object reachable from the root, all numbered
// level 1, and never the one child the walk waits for. Each object it sends
// is dropped by the walk (beyond max_objects), but its refs would be
// remembered as ids that may come, and the stream would run until the
// deadline, decoding and remembering without end. It is cut as soon as it
// answers more ids than max_objects: INTERNAL, naming the problem; and the
// sidecar goes on serving well-formed requests.
func TestExpandFloodIsCutAtMaxObjects(t *testing.T) {
	o := origintest.New(&graph.Object{ID: "ok", Version: 1, Refs: []graph.Ref{{Field: "child", ID: "ok/0"}}},
		&graph.Object{ID: "ok/0", Version: 1})
	o.Misbehave(origintest.Misbehaviour{Generate: origintest.Endless(50), IgnoreBudget: true, Omit: []string{"r/0"},
		Level: func(n uint32) uint32 { return min(n, 1) }})
	r := newHostileRig(t, o, origin.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	s, err := r.client.GetGraph(ctx, &lookaheadv1.GetGraphRequest{Roots: []string{"r"}, Depth: u32(1), MaxObjects: u32(3)})
	require.NoError(t, err)
	_, err = drain(s)
	require.Equal(t, codes.Internal, status.Code(err), "%v", err)
	assert.Contains(t, status.Convert(err).Message(), "origin reply malformed: expand stream answered 50 ids (objects and missing ids), more than its max_objects 3")
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.OriginMalformed.WithLabelValues(metrics.MalformedBeyondBudget)))

	resp, err := r.get("ok")
	require.NoError(t, err, "other requests are served")
	assert.Equal(t, "ok", resp.GetObject().GetId())
	s, err = r.client.GetGraph(ctx, &lookaheadv1.GetGraphRequest{Roots: []string{"ok"}, Depth: u32(1), MaxObjects: u32(3)})
	require.NoError(t, err)
	n, err := drain(s)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
}

// twoTrees is a hostile rig on an origin holding r → r/0, ok → ok/0 and x,
// misbehaving as bad.
func twoTrees(t *testing.T, bad origintest.Misbehaviour) (*origintest.Origin, *hostileRig) {
	o := origintest.New(&graph.Object{ID: "r", Version: 1, Refs: []graph.Ref{{Field: "child", ID: "r/0"}}},
		&graph.Object{ID: "r/0", Version: 1},
		&graph.Object{ID: "ok", Version: 1, Refs: []graph.Ref{{Field: "child", ID: "ok/0"}}},
		&graph.Object{ID: "ok/0", Version: 1}, &graph.Object{ID: "x", Version: 1})
	o.Misbehave(bad)
	return o, newHostileRig(t, o, origin.Config{})
}

// TestExpandOfEmptyMessagesIsCut: an origin answers a GetGraph's Expand
// with messages that hold neither objects nor missing ids, without end.
// None adds to the ids answered, so max_objects never cuts the stream, and
// each is a valid message of the level the walk is at: the sidecar would
// receive them until the deadline. A level with nothing to say may send
// one such message; the one past one per level cuts the stream, INTERNAL,
// naming the problem, and the sidecar goes on serving well-formed
// requests. An origin that sends one per level is served.
func TestExpandOfEmptyMessagesIsCut(t *testing.T) {
	o, r := twoTrees(t, origintest.Misbehaviour{Empty: math.MaxInt})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	s, err := r.client.GetGraph(ctx, &lookaheadv1.GetGraphRequest{Roots: []string{"r"}, Depth: u32(1)})
	require.NoError(t, err)
	_, err = drain(s)
	require.Equal(t, codes.Internal, status.Code(err), "cut, not left to the deadline: %v", err)
	assert.Contains(t, status.Convert(err).Message(),
		"origin reply malformed: expand stream sent 3 messages with neither objects nor missing ids, more than one for each of the 2 levels of its depth 1")
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.OriginMalformed.WithLabelValues(metrics.MalformedEmpty)))

	require.Equal(t, 1, o.Calls("Expand"))
	resp, err := r.get("x")
	require.NoError(t, err, "other requests are served")
	assert.Equal(t, "x", resp.GetObject().GetId())
	o.Misbehave(origintest.Misbehaviour{Empty: 1})
	s, err = r.client.GetGraph(ctx, &lookaheadv1.GetGraphRequest{Roots: []string{"ok"}, Depth: u32(1)})
	require.NoError(t, err)
	n, err := drain(s)
	require.NoError(t, err, "one empty message a level is within the contract")
	assert.Equal(t, 2, n)
	assert.Equal(t, 2, o.Calls("Expand"))
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.OriginMalformed.WithLabelValues(metrics.MalformedEmpty)))
}

// TestExpandWithoutMaxObjectsFloodIsCut: an origin answers an Expand that
// sets no max_objects (what a prefetch runs with --prefetch-max-objects 0,
// or a hint of max_objects 0, while the prefetch tier's cap is unknown)
// with its root, then, without end, messages of objects nobody asked for.
// Each is dropped and counted, but with no max_objects nothing bounded how
// many came, and the root's child is still awaited: the sidecar received
// and dropped them until --origin-timeout or the deadline. Once the
// answers that cannot be used outnumber those that can, the stream is cut,
// INTERNAL, naming the problem, counted as problem="flood"; the sidecar
// goes on serving well-formed requests. An origin that sends as many such
// objects as ones asked for is served (the objects dropped and counted).
func TestExpandWithoutMaxObjectsFloodIsCut(t *testing.T) {
	o, r := twoTrees(t, origintest.Misbehaviour{Unrequested: math.MaxInt})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	flood := r.m.OriginMalformed.WithLabelValues(metrics.MalformedFlood)
	unrequested := r.m.OriginMalformed.WithLabelValues(metrics.MalformedUnrequested)

	x := r.f.NewExpansion([]string{"r"}, graph.Budget{Depth: 1}, true) // a prefetch's, without a cap
	err := toStatus(x.Run(ctx))
	require.Equal(t, codes.Internal, status.Code(err), "cut, not left to the deadline: %v", err)
	assert.Contains(t, status.Convert(err).Message(),
		"origin reply malformed: expand stream without max_objects answered 3 ids of which 2 could not be used (unrequested, duplicates, conflicts, invalid ids), more than the 1 that could")
	assert.Equal(t, 1.0, testutil.ToFloat64(flood))
	assert.Equal(t, 2.0, testutil.ToFloat64(unrequested))
	require.Equal(t, 1, o.Calls("Expand"))

	resp, err := r.get("x")
	require.NoError(t, err, "other requests are served")
	assert.Equal(t, "x", resp.GetObject().GetId())
	o.Misbehave(origintest.Misbehaviour{Unrequested: 1})
	x = r.f.NewExpansion([]string{"ok"}, graph.Budget{Depth: 1}, true)
	require.NoError(t, x.Run(ctx), "one object nobody asked for per object asked for is dropped, not cut")
	objs, rest := x.Delivered([]string{"ok", "ok/0"})
	assert.Equal(t, []string{"ok", "ok/0"}, graph.IDs(objs))
	assert.Empty(t, rest)
	assert.Equal(t, 2, o.Calls("Expand"))
	assert.Equal(t, 1.0, testutil.ToFloat64(flood))
	assert.Equal(t, 3.0, testutil.ToFloat64(unrequested), "the one after the last level is never read: the walk had all it expected")
}
