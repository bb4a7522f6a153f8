package lookahead

import (
	"context"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc/metadata"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// subscriberHeader carries the subscriber id with reads and writes, so that
// the sidecar tracks what this client holds.
const subscriberHeader = "lookahead-subscriber"

// reportHeader marks a report of used pushes: the sidecar answers it
// without objects.
const reportHeader = "lookahead-report"

// helloLease is how long a subscription may take to say hello.
const helloLease = 5 * time.Second

// nearCache is the store fed by one Subscribe stream at a time.
type nearCache struct {
	*store
	rpc      lookaheadv1.SidecarServiceClient
	name     string
	cancel   context.CancelFunc
	done     chan struct{}
	reported chan struct{} // closed when report returns
}

func startNear(rpc lookaheadv1.SidecarServiceClient, budget int64, name string) *nearCache {
	ctx, cancel := context.WithCancel(context.Background())
	n := &nearCache{store: newStore(budget), rpc: rpc, name: name, cancel: cancel, done: make(chan struct{}), reported: make(chan struct{})}
	go n.run(ctx)
	go n.report(ctx)
	return n
}

func (n *nearCache) close() {
	n.cancel()
	<-n.done
	<-n.reported
}

// reportBatch bounds the ids of one report.
const reportBatch = 256

// report tells the sidecar, off the application's path, which pushed
// objects the application read: a read answered in-process never reaches
// the sidecar, whose prefetcher moves its window on the first use of a
// prefetched object. One BatchGet per batch, tracked and marked a report,
// which the sidecar answers without objects (one that predates the mark
// answers them; they are dropped).
func (n *nearCache) report(ctx context.Context) {
	defer close(n.reported)
	ids := make([]string, 0, reportBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-n.used:
			ids = append(ids[:0], id)
		}
		for len(ids) < reportBatch {
			select {
			case id := <-n.used:
				ids = append(ids, id)
				continue
			default:
			}
			break
		}
		_, rctx := n.tracked(ctx)
		rctx = metadata.AppendToOutgoingContext(rctx, reportHeader, "used")
		_, _ = n.rpc.BatchGet(rctx, &lookaheadv1.BatchGetRequest{Ids: ids})
	}
}

// run keeps a subscription open until close: after every break the store
// is emptied at once (no invalidation channel, no cached data) and the
// client subscribes again, with jittered backoff.
func (n *nearCache) run(ctx context.Context) {
	defer close(n.done)
	const minBackoff, maxBackoff = 10 * time.Millisecond, time.Second
	backoff := minBackoff
	for {
		heard := n.session(ctx)
		n.flush(false)
		if heard {
			backoff = minBackoff
		}
		d := backoff/2 + rand.N(backoff/2+1)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// session runs one subscription until it breaks or falls silent for longer
// than its lease; heard says whether it got as far as the hello.
func (n *nearCache) session(ctx context.Context) (heard bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := n.rpc.Subscribe(ctx, &lookaheadv1.SubscribeRequest{BudgetBytes: uint64(n.budget), ClientName: n.name})
	if err != nil {
		return false
	}
	lease := helloLease
	watchdog := time.AfterFunc(lease, cancel)
	defer watchdog.Stop()
	for {
		resp, err := stream.Recv()
		if err != nil {
			return heard
		}
		watchdog.Reset(lease)
		n.lastHeard.Store(time.Now().UnixNano())
		for _, ev := range resp.GetEvents() {
			switch ev := ev.GetEvent().(type) {
			case *lookaheadv1.NearEvent_Hello:
				h := ev.Hello
				lease = 3 * time.Duration(max(h.GetHeartbeatMillis(), 1)) * time.Millisecond
				watchdog.Reset(lease)
				n.up(h.GetSubscriberId(), lease, time.Duration(h.GetMaxAgeMillis())*time.Millisecond)
				heard = true
			case *lookaheadv1.NearEvent_Invalidation:
				inv := ev.Invalidation
				n.floor(inv.GetId(), inv.GetVersion(), inv.GetDeleted(), false)
			case *lookaheadv1.NearEvent_Push:
				n.push(ev.Push.GetObject())
			case *lookaheadv1.NearEvent_Flush:
				n.flush(true)
			}
		}
	}
}

// tracked takes a ticket and adds its subscriber id, if subscribed, to
// ctx's metadata, so that the sidecar tracks the call's ids for this client.
func (n *nearCache) tracked(ctx context.Context) (ticket, context.Context) {
	t := n.takeTicket()
	if t.subscriber != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, subscriberHeader, t.subscriber)
	}
	return t, ctx
}

// fetchOne reads id through the sidecar, tracked, and keeps the answer
// unless it is stale or something was lost meanwhile.
func (n *nearCache) fetchOne(ctx context.Context, id string, hint *lookaheadv1.PrefetchHint) (*lookaheadv1.Object, Status, error) {
	t, ctx := n.tracked(ctx)
	resp, err := n.rpc.Get(ctx, &lookaheadv1.GetRequest{Id: id, Hint: hint})
	if err != nil {
		return nil, Status{}, err
	}
	if t.subscriber != "" && !resp.GetStale() {
		n.fill(resp.GetObject(), t, false)
	}
	return resp.GetObject(), Status{Cache: resp.GetStatus(), Stale: resp.GetStale()}, nil
}

// batchGet answers what the near cache holds and asks the sidecar, in one
// call, for the rest.
func (n *nearCache) batchGet(ctx context.Context, ids []string, hint *lookaheadv1.PrefetchHint) ([]Result, []string, error) {
	near := make(map[string]*lookaheadv1.Object, len(ids))
	var ask []string
	for _, id := range ids {
		if _, ok := near[id]; ok {
			continue
		}
		o := n.get(id)
		near[id] = o
		if o == nil {
			ask = append(ask, id)
		}
	}
	var (
		asked   map[string]Result
		missing []string
	)
	if len(ask) > 0 {
		t, actx := n.tracked(ctx)
		resp, err := n.rpc.BatchGet(actx, &lookaheadv1.BatchGetRequest{Ids: ask, Hint: hint})
		if err != nil {
			return nil, nil, err
		}
		asked = make(map[string]Result, len(resp.GetResults()))
		for _, r := range resp.GetResults() {
			asked[r.GetObject().GetId()] = fromProto(r)
			if t.subscriber != "" && !r.GetStale() {
				n.fill(r.GetObject(), t, false)
			}
		}
		missing = resp.GetMissingIds()
	}
	out := make([]Result, 0, len(near))
	for _, id := range ids {
		o, ok := near[id]
		if !ok {
			continue // a duplicate, already answered
		}
		delete(near, id)
		if o != nil {
			out = append(out, Result{Object: o, Status: Status{Near: true}})
		} else if r, ok := asked[id]; ok {
			out = append(out, r)
		}
	}
	return out, missing, nil
}

// wrote applies a write of ours, made with ticket t, before it returns: the
// near copy goes, and a floor keeps older copies out. A delete's version is
// not known: every copy is refused until the sidecar reports it, which it
// does only if it tracked the write for the current subscription.
func (n *nearCache) wrote(t ticket, id string, version uint64, deleted bool, err error) {
	switch {
	case err != nil:
		n.floor(id, 0, false, false)
	case deleted:
		n.deleted(id, t)
	default:
		n.floor(id, version, false, false)
	}
}
