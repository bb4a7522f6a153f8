package prefetch

import (
	"sync"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// call is one origin fetch of a batch of ids. Its result fields are written
// once, before done is closed, and only read after.
type call struct {
	done        chan struct{}
	speculative bool
	// partial: an id absent from objs was not delivered (an Expand's budget
	// ran out), rather than found not to exist; its waiters fetch it.
	partial bool
	objs    map[string]*graph.Object
	err     error
}

// inflight is the table of ids being fetched: Knafla's prefetch list and
// groupcache's singleflight, per id rather than per key, because one origin
// BatchGet carries many ids and a later request may need any subset of them.
type inflight struct {
	mu    sync.Mutex
	calls map[string]*call // id → the fetch that will deliver it
}

// claim splits ids into those already in flight (grouped by the call that
// will deliver them) and new batches of at most batchSize ids that the caller
// now owns and must finish with release.
func (f *inflight) claim(ids []string, batchSize int, speculative bool) (joins map[*call][]string, own []*batch) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = make(map[string]*call)
	}
	var cur *batch
	for _, id := range ids {
		if c, ok := f.calls[id]; ok {
			if joins == nil {
				joins = make(map[*call][]string)
			}
			joins[c] = append(joins[c], id)
			continue
		}
		if cur == nil || len(cur.ids) == batchSize {
			cur = &batch{call: &call{done: make(chan struct{}), speculative: speculative}}
			own = append(own, cur)
		}
		cur.ids = append(cur.ids, id)
		f.calls[id] = cur.call
	}
	return joins, own
}

// release removes a finished batch from the table and wakes its joiners. The
// caller fills the cache before release, so that a request arriving after
// release finds the objects cached rather than fetching them again.
func (f *inflight) release(b *batch) {
	f.mu.Lock()
	for _, id := range b.ids {
		if f.calls[id] == b.call {
			delete(f.calls, id)
		}
	}
	f.mu.Unlock()
	close(b.call.done)
}

// forget detaches id from the fetch in flight for it, if any: that fetch
// still answers those already waiting, but a later request starts its own.
// For changes: a fetch that began before a change may carry the old version.
func (f *inflight) forget(id string) {
	f.mu.Lock()
	delete(f.calls, id)
	f.mu.Unlock()
}

type batch struct {
	ids  []string
	call *call
}
