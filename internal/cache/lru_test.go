package cache

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// order lists the ids of l from newest to oldest, checking the links and the
// cost invariant on the way.
func order(t *testing.T, l *lru) []string {
	t.Helper()
	var ids []string
	var cost int64
	for n := l.root.next; n != &l.root; n = n.next {
		require.Same(t, n, n.next.prev, "broken link after %s", n.id)
		require.Same(t, n, l.items[n.id], "listed node %s is not in the map", n.id)
		ids = append(ids, n.id)
		cost += n.cost
	}
	require.Len(t, l.items, len(ids), "map and list disagree")
	require.Equal(t, cost, l.cost, "cost is not the sum of node costs")
	require.LessOrEqual(t, l.cost, l.budget)
	return ids
}

func TestLRU(t *testing.T) {
	type op struct {
		add    string // add a node with this id and cost
		cost   int64
		touch  string
		remove string
	}
	cases := []struct {
		name        string
		budget      int64
		ops         []op
		wantOrder   []string // newest first
		wantEvicted []string // in eviction order, over all adds
	}{
		{
			name:      "empty",
			budget:    10,
			wantOrder: nil,
		},
		{
			name:      "newest first",
			budget:    10,
			ops:       []op{{add: "a", cost: 1}, {add: "b", cost: 1}, {add: "c", cost: 1}},
			wantOrder: []string{"c", "b", "a"},
		},
		{
			name:        "evicts oldest when over budget",
			budget:      3,
			ops:         []op{{add: "a", cost: 1}, {add: "b", cost: 1}, {add: "c", cost: 1}, {add: "d", cost: 1}},
			wantOrder:   []string{"d", "c", "b"},
			wantEvicted: []string{"a"},
		},
		{
			name:        "a touched node is evicted last",
			budget:      3,
			ops:         []op{{add: "a", cost: 1}, {add: "b", cost: 1}, {add: "c", cost: 1}, {touch: "a"}, {add: "d", cost: 1}},
			wantOrder:   []string{"d", "a", "c"},
			wantEvicted: []string{"b"},
		},
		{
			name:        "a large node evicts several",
			budget:      4,
			ops:         []op{{add: "a", cost: 1}, {add: "b", cost: 1}, {add: "c", cost: 2}, {add: "d", cost: 3}},
			wantOrder:   []string{"d"},
			wantEvicted: []string{"a", "b", "c"},
		},
		{
			name:      "a node larger than the budget is refused",
			budget:    2,
			ops:       []op{{add: "a", cost: 1}, {add: "huge", cost: 3}},
			wantOrder: []string{"a"},
		},
		{
			name:      "a node of exactly the budget fits",
			budget:    2,
			ops:       []op{{add: "a", cost: 2}},
			wantOrder: []string{"a"},
		},
		{
			name:      "remove frees its cost",
			budget:    2,
			ops:       []op{{add: "a", cost: 1}, {add: "b", cost: 1}, {remove: "a"}, {add: "c", cost: 1}},
			wantOrder: []string{"c", "b"},
		},
		{
			name:      "touching the newest is a no-op",
			budget:    5,
			ops:       []op{{add: "a", cost: 1}, {add: "b", cost: 1}, {touch: "b"}},
			wantOrder: []string{"b", "a"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newLRU(tc.budget)
			var evicted []string
			for _, o := range tc.ops {
				switch {
				case o.add != "":
					ev, ok := l.add(&node{id: o.add, cost: o.cost}, nil)
					assert.Equal(t, o.cost <= tc.budget, ok, "add %s", o.add)
					for _, n := range ev {
						assert.Nil(t, n.prev, "evicted node still linked")
						evicted = append(evicted, n.id)
					}
				case o.touch != "":
					l.touch(l.get(o.touch))
				case o.remove != "":
					l.remove(l.get(o.remove))
				}
				order(t, l)
			}
			assert.Equal(t, tc.wantOrder, order(t, l))
			assert.Equal(t, tc.wantEvicted, evicted)
		})
	}
}

func TestLRUPruneExpired(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := newLRU(10)
	for i, id := range []string{"a", "b", "c"} {
		l.add(&node{id: id, cost: 1, expires: t0.Add(time.Duration(i+1) * time.Second)}, nil)
	}
	l.add(&node{id: "forever", cost: 1}, nil)

	removed := l.pruneExpired(t0.Add(2*time.Second), nil)
	var ids []string
	for _, n := range removed {
		ids = append(ids, n.id)
	}
	assert.Equal(t, []string{"a", "b"}, ids, "expiry is inclusive, oldest first")
	assert.Equal(t, []string{"forever", "c"}, order(t, l))

	removed = l.pruneExpired(t0.Add(time.Hour), nil)
	require.Len(t, removed, 1, "stops at the first live node")
	assert.Equal(t, "c", removed[0].id)
	assert.Equal(t, []string{"forever"}, order(t, l))
}
