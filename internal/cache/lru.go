package cache

import (
	"time"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// node is one prefetch-tier object or one remembered absence.
type node struct {
	id      string
	obj     *graph.Object // nil for a remembered absence
	cost    int64         // charged against the lru's budget; fixed while linked
	expires time.Time     // zero = never: dropped at expires
	fresh   time.Time     // zero = always fresh: answered as stale from fresh on
	// version, deleted and seq describe a version floor (Cache.floors
	// only); seq is the change's number in Cache.changes.
	version uint64
	deleted bool
	seq     uint64
	// used is true once the object was demanded: hit, promoted or stored here
	// on behalf of a demand. Evicting a used node is not wasted speculation.
	used bool
	// demanded is true for an object a walk stored here (FillWalked): a
	// hit on it is a main-tier hit.
	demanded bool
	// promoSeq is non-zero while a promotion of this node to the main tier
	// has been accepted by ristretto but is not known to have been applied:
	// it is the Cache.issued sequence of that Set.
	promoSeq   uint64
	prev, next *node // list links; nil when not linked
}

// expired reports whether n has outlived its TTL at now.
func (n *node) expired(now time.Time) bool { return expired(n.expires, now) }

func expired(expires, now time.Time) bool { return !expires.IsZero() && !now.Before(expires) }

// lru is a map plus an intrusive doubly-linked list, ordered from the most
// recently inserted or touched node to the oldest, and bounded by the total
// cost of its nodes. It is not safe for concurrent use: Cache locks it.
//
// Invariants: items holds exactly the linked nodes; cost is the sum of their
// costs and never exceeds budget once add returns.
type lru struct {
	budget int64
	cost   int64
	items  map[string]*node
	root   node // sentinel: root.next is the newest node, root.prev the oldest
}

func newLRU(budget int64) *lru {
	l := &lru{budget: budget, items: make(map[string]*node)}
	l.root.next, l.root.prev = &l.root, &l.root
	return l
}

// len is the number of nodes held.
func (l *lru) len() int { return len(l.items) }

// get returns the node for id, or nil. It does not touch it.
func (l *lru) get(id string) *node { return l.items[id] }

// oldest returns the least recently inserted or touched node, or nil.
func (l *lru) oldest() *node {
	if l.root.prev == &l.root {
		return nil
	}
	return l.root.prev
}

// add inserts n as the newest node and evicts the oldest nodes until the
// budget holds again, appending them to evicted (oldest first). A node whose
// cost alone exceeds the budget is not inserted: ok is false. The caller
// removes any node with n's id first.
func (l *lru) add(n *node, evicted []*node) (_ []*node, ok bool) {
	if n.cost > l.budget {
		return evicted, false
	}
	l.items[n.id] = n
	l.cost += n.cost
	l.link(n)
	for l.cost > l.budget {
		o := l.root.prev // never n: n alone fits
		l.remove(o)
		evicted = append(evicted, o)
	}
	return evicted, true
}

// remove unlinks n, which must be held.
func (l *lru) remove(n *node) {
	delete(l.items, n.id)
	l.cost -= n.cost
	n.prev.next, n.next.prev = n.next, n.prev
	n.prev, n.next = nil, nil
}

// touch makes n, which must be held, the newest node.
func (l *lru) touch(n *node) {
	if l.root.next == n {
		return
	}
	n.prev.next, n.next.prev = n.next, n.prev
	l.link(n)
}

func (l *lru) link(n *node) {
	n.prev, n.next = &l.root, l.root.next
	l.root.next.prev = n
	l.root.next = n
}

// pruneExpired removes expired nodes from the old end of the list, stopping
// at the first live one, and appends them to removed. With one TTL for every
// node the old end is where expiry happens first; expired nodes deeper in the
// list are dropped when they are next looked up.
func (l *lru) pruneExpired(now time.Time, removed []*node) []*node {
	for o := l.oldest(); o != nil && o.expired(now); o = l.oldest() {
		l.remove(o)
		removed = append(removed, o)
	}
	return removed
}
