package prefetch

import (
	"fmt"
	"testing"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// TestLearnedOffersEachListsFirstOfAHub: a hub whose two fields' refs
// alternate offers the first offersPerList of each, so that the offer loop,
// which ends at the last ref it offers, does not end at the first list's.
func TestLearnedOffersEachListsFirstOfAHub(t *testing.T) {
	h := &graph.Object{ID: "h", Type: "Hub"}
	for i := range offersPerList + 50 {
		for _, f := range []string{"a", "b"} {
			h.Refs = append(h.Refs, graph.Ref{Field: f, ID: fmt.Sprint(f, i)})
		}
	}
	l := NewLearned(LearnedConfig{})
	l.Read([]*graph.Object{h}, true, 0)
	last := fmt.Sprint("b", offersPerList-1)
	if len(l.offers) != 2*offersPerList || len(l.pendingOf(last)) != 1 || l.offers[fmt.Sprint("b", offersPerList)] != nil {
		t.Fatalf("%d refs offered (want %d), %s offered %d times (want 1)", len(l.offers), 2*offersPerList, last, len(l.pendingOf(last)))
	}
}

// TestLearnedChancesOfAHubPastItsRun: on a hub whose first refs of one
// field were read, the chances past the run are 0 and another field's refs
// after them still get theirs, so that stopping the estimates of one field
// does not stop the others'.
func TestLearnedChancesOfAHubPastItsRun(t *testing.T) {
	h := &graph.Object{ID: "h", Type: "Hub"}
	for i := range 100 {
		h.Refs = append(h.Refs, graph.Ref{Field: "a", ID: fmt.Sprint("a", i)})
	}
	h.Refs = append(h.Refs, graph.Ref{Field: "b", ID: "b0"})
	l := NewLearned(LearnedConfig{})
	for range 10 {
		l.Read([]*graph.Object{h}, true, 0)
		l.Read([]*graph.Object{node("a0")}, true, 0)
		l.Read([]*graph.Object{node("b0")}, true, 0)
	}
	got := l.Chances(h, 0, 0, nil)
	if len(got) != len(h.Refs) || got[0] == 0 || got[99] != 0 || got[100] == 0 {
		t.Fatalf("chances a0 %v, a99 %v (want 0), b0 %v (want > 0), %d of %d refs", got[0], got[99], got[100], len(got), len(h.Refs))
	}
}
