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
