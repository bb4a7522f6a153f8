package prefetch

import (
	"fmt"
	"slices"
	"testing"
)

// TestDedupe: repeated ids are dropped, the first of each kept in order,
// for a short list (checked pairwise) and a long one (with a map).
func TestDedupe(t *testing.T) {
	short := []string{"b", "a", "b", "c", "a"}
	if got := dedupe(short); !slices.Equal(got, []string{"b", "a", "c"}) {
		t.Errorf("short: got %v, want [b a c]", got)
	}
	var long, want []string
	for i := range 3 * dedupeScan {
		long = append(long, fmt.Sprint(i%(dedupeScan+2)))
	}
	for i := range dedupeScan + 2 {
		want = append(want, fmt.Sprint(i))
	}
	if got := dedupe(long); !slices.Equal(got, want) {
		t.Errorf("long: got %v, want %v", got, want)
	}
}

// TestLearnedWalkForgets: a walk remembers what it read and from which
// list until the next starts, and no more than maxWalk ids.
func TestLearnedWalkForgets(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	l.walkRead("a", "p")
	if !l.skippedLocked("q", "a") || l.skippedLocked("p", "a") {
		t.Fatal("a read from p's list: a reader of q's list skips it, one of p's does not")
	}
	l.startWalkLocked()
	if l.skippedLocked("q", "a") {
		t.Fatal("a was read in the walk before: a reader of q's list reads it again")
	}
	for i := range maxWalk + 1 {
		l.walkRead(fmt.Sprint(i), "p")
	}
	if len(l.walk) != 1 || !l.skippedLocked("q", fmt.Sprint(maxWalk)) {
		t.Fatalf("walk holds %d ids after maxWalk+1 reads, want only the last", len(l.walk))
	}
}
