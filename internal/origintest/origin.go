// Package origintest is an in-process origin object service that misbehaves
// on command, for tests of anything that talks to an origin.
//
// An Origin serves its objects the way origin.proto says (BatchGet, Expand,
// Watch, Put, Delete and grpc.health) until a test calls Misbehave; then it
// sends what a buggy or compromised origin might: errors, replies that leave
// ids out, Expand streams that never end, say nothing, send objects nobody
// asked for or number their levels wrongly, objects with a million refs,
// versions older than it announced, Watch revisions that go backwards,
// SERVING health while every read fails, slow or hung replies, and reset
// connections:
//
//	o := origintest.New(objs...)
//	cc := o.Start(t) // or addr := o.StartTCP(t) for a real sidecar binary
//	o.Misbehave(origintest.Misbehaviour{Omit: []string{"a"}})
//	o.Announce(origin.Change{Revision: 7, ID: "a", Version: 5}) // while BatchGet keeps serving version 1
package origintest

import (
	"context"
	"math"
	"strconv"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
	"github.com/lookahead-dev/lookahead/internal/origin"
)

// Origin is the service. Its methods are safe for concurrent use.
type Origin struct {
	lookaheadv1.UnimplementedOriginServiceServer
	health *health.Server

	mu      sync.Mutex // protects the fields below
	objs    map[string]*graph.Object
	bad     Misbehaviour
	calls   map[string]int
	changes []origin.Change // the Watch log, in the order announced
	rev     uint64          // the highest revision announced
	notify  chan struct{}   // closed and replaced when changes grow
	conns   *connSet
}

// New returns a well-behaved origin holding objs.
func New(objs ...*graph.Object) *Origin {
	o := &Origin{
		health: health.NewServer(), objs: map[string]*graph.Object{}, calls: map[string]int{},
		notify: make(chan struct{}), conns: newConnSet(),
	}
	o.Set(objs...)
	o.setHealth(healthpb.HealthCheckResponse_SERVING)
	return o
}

// Set stores objs, replacing objects of the same ids, without announcing
// anything on Watch.
func (o *Origin) Set(objs ...*graph.Object) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, ob := range objs {
		o.objs[ob.ID] = ob
	}
}

// Misbehave replaces the current misbehaviour; Misbehaviour{} restores the
// contract.
func (o *Origin) Misbehave(m Misbehaviour) {
	o.mu.Lock()
	o.bad = m
	o.mu.Unlock()
	h := m.Health
	if h == healthpb.HealthCheckResponse_UNKNOWN {
		h = healthpb.HealthCheckResponse_SERVING
	}
	o.setHealth(h)
}

func (o *Origin) setHealth(h healthpb.HealthCheckResponse_ServingStatus) {
	o.health.SetServingStatus("", h)
	o.health.SetServingStatus(lookaheadv1.OriginService_ServiceDesc.ServiceName, h)
}

// Announce sends changes to every Watch stream, verbatim and in this order,
// and keeps them for streams that resume later: revisions may go
// backwards, and versions may be newer than what BatchGet serves.
func (o *Origin) Announce(changes ...origin.Change) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.changes = append(o.changes, changes...)
	for _, c := range changes {
		o.rev = max(o.rev, c.Revision)
	}
	close(o.notify)
	o.notify = make(chan struct{})
}

// Calls is how many calls of rpc ("BatchGet", "Expand", "Watch", "Put",
// "Delete") the origin has received.
func (o *Origin) Calls(rpc string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.calls[rpc]
}

// begin counts a call of rpc and returns the misbehaviour it starts under.
func (o *Origin) begin(rpc string) Misbehaviour {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls[rpc]++
	return o.bad
}

func (o *Origin) current() Misbehaviour {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.bad
}

// lookup returns the objects of ids that exist (stored or generated) and
// the ids that do not.
func (o *Origin) lookup(ids []string, gen func(string) *graph.Object) (found []*graph.Object, missing []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, id := range ids {
		switch ob, ok := o.objs[id]; {
		case ok:
			found = append(found, ob)
		case gen != nil:
			found = append(found, gen(id))
		default:
			missing = append(missing, id)
		}
	}
	return found, missing
}

// BatchGet implements lookaheadv1.OriginServiceServer.
func (o *Origin) BatchGet(ctx context.Context, req *lookaheadv1.OriginServiceBatchGetRequest) (*lookaheadv1.OriginServiceBatchGetResponse, error) {
	bad := o.begin("BatchGet")
	if err := shed(ctx, bad); err != nil {
		return nil, err
	}
	if err := wait(ctx, bad); err != nil {
		return nil, err
	}
	if bad.BatchGetErr != nil {
		return nil, bad.BatchGetErr
	}
	found, missing := o.lookup(bad.without(req.GetIds()), bad.Generate)
	return &lookaheadv1.OriginServiceBatchGetResponse{Objects: graphpb.ToProtos(found), MissingIds: missing}, nil
}

// Expand implements lookaheadv1.OriginServiceServer: one message per level,
// breadth-first with graph.Traversal, misnumbered or unbounded on command.
func (o *Origin) Expand(req *lookaheadv1.ExpandRequest, stream grpc.ServerStreamingServer[lookaheadv1.ExpandResponse]) error {
	bad := o.begin("Expand")
	ctx := stream.Context()
	if err := shed(ctx, bad); err != nil {
		return err
	}
	b := graph.Budget{Depth: int(req.GetDepth()), MaxObjects: int(req.GetMaxObjects()), Fields: req.GetFields()}
	if bad.IgnoreBudget {
		b.Depth, b.MaxObjects = math.MaxInt, 0
	}
	t := graph.NewTraversal(req.GetRoots(), b)
	for n := uint32(0); !t.Done(); n++ {
		bad = o.current()
		if err := wait(ctx, bad); err != nil {
			return err
		}
		found, missing := o.lookup(bad.without(t.Pending()), bad.Generate)
		level := n
		if bad.Level != nil {
			level = bad.Level(n)
		}
		for range bad.Empty {
			if err := stream.Send(&lookaheadv1.ExpandResponse{Level: level}); err != nil {
				return err
			}
		}
		msg := &lookaheadv1.ExpandResponse{Level: level, Objects: graphpb.ToProtos(t.Resolve(found)), MissingIds: missing}
		if err := stream.Send(msg); err != nil {
			return err
		}
		for i := range bad.Unrequested {
			u := &lookaheadv1.Object{Id: "unrequested/" + strconv.FormatUint(uint64(n), 10) + "/" + strconv.Itoa(i), Version: 1}
			if err := stream.Send(&lookaheadv1.ExpandResponse{Level: level, Objects: []*lookaheadv1.Object{u}}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Put implements lookaheadv1.OriginServiceServer: it stores the object one
// version up and announces it on Watch.
func (o *Origin) Put(_ context.Context, req *lookaheadv1.OriginServicePutRequest) (*lookaheadv1.OriginServicePutResponse, error) {
	o.begin("Put")
	ob := graphpb.FromProto(req.GetObject())
	o.mu.Lock()
	var v uint64
	if old, ok := o.objs[ob.ID]; ok {
		v = old.Version
	}
	if req.ExpectedVersion != nil && req.GetExpectedVersion() != v {
		o.mu.Unlock()
		return nil, status.Errorf(codes.FailedPrecondition, "object %q is at version %d, not %d", ob.ID, v, req.GetExpectedVersion())
	}
	cp := *ob
	cp.Version = v + 1
	o.objs[ob.ID] = &cp
	rev := o.rev + 1
	o.mu.Unlock()
	o.Announce(origin.Change{Revision: rev, ID: ob.ID, Version: cp.Version})
	return &lookaheadv1.OriginServicePutResponse{Version: cp.Version, Revision: rev}, nil
}

// Delete implements lookaheadv1.OriginServiceServer.
func (o *Origin) Delete(_ context.Context, req *lookaheadv1.OriginServiceDeleteRequest) (*lookaheadv1.OriginServiceDeleteResponse, error) {
	o.begin("Delete")
	o.mu.Lock()
	old, ok := o.objs[req.GetId()]
	delete(o.objs, req.GetId())
	rev := o.rev + 1
	o.mu.Unlock()
	if ok {
		o.Announce(origin.Change{Revision: rev, ID: old.ID, Version: old.Version + 1, Deleted: true})
	}
	return &lookaheadv1.OriginServiceDeleteResponse{Revision: rev}, nil
}

// Watch implements lookaheadv1.OriginServiceServer: the header announces
// the highest revision so far (or Misbehaviour.WatchStart), then every
// announced change after from_revision is sent in announcement order, and
// new ones as they come.
func (o *Origin) Watch(req *lookaheadv1.WatchRequest, stream grpc.ServerStreamingServer[lookaheadv1.WatchResponse]) error {
	bad := o.begin("Watch")
	o.mu.Lock()
	start := o.rev
	next := len(o.changes)
	if req.FromRevision != nil {
		next = 0
	}
	o.mu.Unlock()
	if bad.WatchStart != nil {
		start = *bad.WatchStart
	}
	if err := stream.SendHeader(metadata.Pairs(origin.RevisionHeader, strconv.FormatUint(start, 10))); err != nil {
		return err
	}
	for replay := req.FromRevision != nil; ; replay = false {
		o.mu.Lock()
		batch := o.changes[next:]
		next = len(o.changes)
		notify := o.notify
		o.mu.Unlock()
		msg := &lookaheadv1.WatchResponse{}
		for _, c := range batch {
			if !replay || c.Revision > req.GetFromRevision() { // the resume point filters history, not what comes live
				msg.Changes = append(msg.Changes, &lookaheadv1.Change{Revision: c.Revision, Id: c.ID, Version: c.Version, Deleted: c.Deleted})
			}
		}
		if len(msg.Changes) > 0 {
			if err := stream.Send(msg); err != nil {
				return err
			}
		}
		select {
		case <-stream.Context().Done():
			return status.FromContextError(stream.Context().Err()).Err()
		case <-notify:
		}
	}
}
