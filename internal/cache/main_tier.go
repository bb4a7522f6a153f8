package cache

import (
	"sync/atomic"
	"time"

	"github.com/dgraph-io/ristretto/v2"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// entry is one main-tier value. Every Set stores a fresh entry, so ristretto
// hands each entry to OnExit at most once per time it was stored, and the
// counted flag makes the byte accounting exact whichever path removes it.
type entry struct {
	obj     *graph.Object
	cost    int64     // obj.Size() when stored
	expires time.Time // zero = never; checked against Config.Now
	fresh   time.Time // zero = always fresh; answered as stale from fresh on
	// counted is true while cost is included in mainTier.bytes. It is set
	// before the Set and cleared exactly once, by whoever sees the entry
	// leave: OnExit (rejected, evicted, expired, replaced, deleted) or the
	// writer when its Set was dropped.
	counted atomic.Bool
}

// mainTier is ristretto plus lookahead's own byte and object accounting.
//
// Why not ristretto's Metrics (CostAdded - CostEvicted)? They describe its
// policy, not its store: they lag Del until the buffered delete is applied,
// an update whose buffered cost change is dropped leaves them stale forever,
// and turning them on adds atomic counters to every Get. Counting entries in
// and out through OnExit describes what Get can actually return: an entry is
// counted from its accepted Set until ristretto lets go of it. The only
// imprecision left is a Set still in ristretto's buffer that its admission
// policy will reject: counted from Set until OnReject (microseconds), and
// exact again after every Wait.
type mainTier struct {
	rc      *ristretto.Cache[string, *entry]
	bytes   atomic.Int64 // sum of cost of counted entries
	objects atomic.Int64 // number of counted entries
	// set writes to ristretto and reports whether the Set was accepted; tests
	// replace it to force dropped Sets deterministically.
	set func(id string, e *entry, ttl time.Duration) bool
}

// mainCallbacks are what ristretto reports back; they run on its goroutine or
// inside Set and Del, so they must never take Cache.mu.
type mainCallbacks struct {
	evicted  func()
	rejected func()
}

func newMainTier(maxBytes int64, cb mainCallbacks) (*mainTier, error) {
	t := &mainTier{}
	rc, err := ristretto.NewCache(&ristretto.Config[string, *entry]{
		NumCounters:        numCounters(maxBytes),
		MaxCost:            maxBytes,
		BufferItems:        bufferItems,
		IgnoreInternalCost: true, // cost is object bytes, budgets are object bytes
		OnEvict: func(it *ristretto.Item[*entry]) {
			// A victim whose value is nil was already deleted. The TTL sweep
			// sets Expiration; an eviction for room does not.
			if it.Value != nil && it.Expiration.IsZero() {
				cb.evicted()
			}
		},
		OnReject: func(*ristretto.Item[*entry]) { cb.rejected() },
		OnExit:   t.uncount,
	})
	if err != nil {
		return nil, err
	}
	t.rc = rc
	t.set = func(id string, e *entry, ttl time.Duration) bool {
		return rc.SetWithTTL(id, e, e.cost, ttl)
	}
	return t, nil
}

// store writes e under id and reports whether ristretto accepted the Set. An
// accepted Set becomes visible to get once ristretto's goroutine applies it
// (at the latest when a later Wait returns) unless admission rejects it.
func (t *mainTier) store(id string, e *entry, ttl time.Duration) bool {
	// Count first: a rejection may call uncount before set even returns.
	e.counted.Store(true)
	t.bytes.Add(e.cost)
	t.objects.Add(1)
	if t.set(id, e, ttl) {
		return true
	}
	t.uncount(e) // dropped: ristretto never saw it, so nobody else will
	return false
}

func (t *mainTier) uncount(e *entry) {
	if e != nil && e.counted.CompareAndSwap(true, false) {
		t.bytes.Add(-e.cost)
		t.objects.Add(-1)
	}
}

// get returns the live entry for id. Like every ristretto Get it counts as an
// access for admission: ristretto has no read that does not.
func (t *mainTier) get(id string, now func() time.Time) (*entry, bool) {
	e, ok := t.rc.Get(id)
	if !ok || (!e.expires.IsZero() && expired(e.expires, now())) {
		return nil, false
	}
	return e, true
}

// has reports whether ristretto holds id, without counting an access. It
// sees expiry by ristretto's wall clock, not Config.Now.
func (t *mainTier) has(id string) bool {
	_, ok := t.rc.GetTTL(id)
	return ok
}
