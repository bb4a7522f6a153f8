package cache

import (
	"math"
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
	// refused is set by the main tier's version check when the entry's
	// key already holds a copy it must not replace (see Cache.refuses).
	refused atomic.Bool
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

// newMainTier builds the tier; refuses is the version rule a Set of a key
// already stored must pass (see Cache), checked by ristretto under its lock
// at the moment of the Set, so that a fill needs no Get before its Set.
func newMainTier(maxBytes int64, cb mainCallbacks, refuses func(inc, cur *entry) bool) (*mainTier, error) {
	t := &mainTier{}
	rc, err := ristretto.NewCache(&ristretto.Config[string, *entry]{
		NumCounters:        numCounters(maxBytes),
		MaxCost:            maxBytes,
		BufferItems:        bufferItems,
		IgnoreInternalCost: true, // cost is object bytes, budgets are object bytes
		ShouldUpdate: func(inc, cur *entry) bool {
			if refuses(inc, cur) {
				inc.refused.Store(true)
				return false
			}
			return true
		},
		// A refused Set still reaches ristretto's policy as a new item (its
		// Update failed); a cost above the budget makes the policy reject it
		// before it touches the key's cost or counters. Sets pass cost 0 so
		// that this runs after the check.
		Cost: func(e *entry) int64 {
			if e.refused.Load() {
				return math.MaxInt64
			}
			return e.cost
		},
		OnEvict: func(it *ristretto.Item[*entry]) {
			// A victim whose value is nil was already deleted. The TTL sweep
			// sets Expiration; an eviction for room does not.
			if it.Value != nil && it.Expiration.IsZero() {
				cb.evicted()
			}
		},
		OnReject: func(it *ristretto.Item[*entry]) {
			if it.Value == nil || !it.Value.refused.Load() {
				cb.rejected()
			}
		},
		OnExit: t.uncount,
	})
	if err != nil {
		return nil, err
	}
	t.rc = rc
	t.set = func(id string, e *entry, ttl time.Duration) bool {
		return rc.SetWithTTL(id, e, 0, ttl) // cost 0: Config.Cost sets it
	}
	return t, nil
}

// setResult is what became of a main-tier Set.
type setResult uint8

const (
	setAccepted setResult = iota // visible once ristretto applies it, unless admission rejects it
	setRefused                   // the tier holds a copy e must not replace (the version rule)
	setDropped                   // ristretto's buffer was full: nothing stored
)

// store writes e under id. An accepted Set becomes visible to get once
// ristretto's goroutine applies it (at the latest when a later Wait
// returns) unless admission rejects it.
func (t *mainTier) store(id string, e *entry, ttl time.Duration) setResult {
	// Count first: a rejection may call uncount before set even returns.
	e.counted.Store(true)
	t.bytes.Add(e.cost)
	t.objects.Add(1)
	ok := t.set(id, e, ttl)
	if !ok {
		t.uncount(e) // ristretto never saw it, so nobody else will
	}
	switch {
	case e.refused.Load():
		return setRefused // its policy rejects it: OnExit uncounts it
	case ok:
		return setAccepted
	}
	return setDropped
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
