package prefetch

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// farReader is uniform for an application that reads distance objects in
// a round trip.
type farReader struct {
	uniform
	distance int
}

func (f farReader) Distance(time.Duration) int { return f.distance }

// listOfHeld is a list "h" of n objects "m-i", each with one ref to a
// "c-i": the list's objects are held, what they lead to is not.
func listOfHeld(t *testing.T, n int, ch Chooser) (*rig, *fakeOrigin) {
	t.Helper()
	objs := []*graph.Object{{ID: "h", Type: "List"}}
	for i := range n {
		objs[0].Refs = append(objs[0].Refs, graph.Ref{Field: "items", ID: fmt.Sprint("m-", i)})
		objs = append(objs, &graph.Object{ID: fmt.Sprint("m-", i), Type: "Item", Refs: []graph.Ref{{Field: "next", ID: fmt.Sprint("c-", i)}}},
			&graph.Object{ID: fmt.Sprint("c-", i), Type: "Item"})
	}
	fo := newFakeOrigin(objs)
	r := newRig(t, fo, Config{Mode: ModeAdaptive}, ch, cache.Config{})
	var held []string
	for i := range n {
		held = append(held, fmt.Sprint("m-", i))
	}
	_, err := r.engine.f.Speculate(context.Background(), held)
	require.NoError(t, err)
	return r, fo
}

// fetchedBelow is the "c-" ids the origin was asked for, sorted.
func fetchedBelow(fo *fakeOrigin) []string {
	var out []string
	for _, ids := range fo.AskedIDs() {
		for _, id := range ids {
			if strings.HasPrefix(id, "c-") {
				out = append(out, id)
			}
		}
	}
	slices.Sort(out)
	return out
}

func cIDs(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprint("c-", i))
	}
	slices.Sort(out)
	return out
}

// A chance job walks on through a level's held objects only as far as the
// application reads in two round trips, and never fewer than minWalkHeld,
// likeliest first: below a list of 200 held objects, every one as likely
// as the next, it fetches what the first 64 lead to, for an application
// that reads one object a round trip, and what all 200 do for one that
// reads 100.
func TestChanceJobWalksThroughTheHeldItCanReach(t *testing.T) {
	for _, tt := range []struct {
		distance int
		want     []string
	}{
		{1, cIDs(minWalkHeld)},
		{100, cIDs(200)},
	} {
		t.Run(fmt.Sprint("distance=", tt.distance), func(t *testing.T) {
			r, fo := listOfHeld(t, 200, farReader{uniform{p: 1, ahead: 4, near: 0.5}, tt.distance})
			_, _, err := r.engine.Get(context.Background(), []string{"h"}, Hint{})
			require.NoError(t, err)
			r.engine.s.Idle()
			assert.Equal(t, tt.want, fetchedBelow(fo))
		})
	}
}
