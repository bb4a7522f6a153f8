package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

func TestParseW5Grid(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    []W5Static
		wantErr string
	}{
		{name: "two points", in: "1/20,2/100", want: []W5Static{{1, 20}, {2, 100}}},
		{name: "spaces around points", in: " 1/20 , 3/0", want: []W5Static{{1, 20}, {3, 0}}},
		{name: "no slash", in: "1", wantErr: `"1"`},
		{name: "not numbers", in: "1/20,a/b", wantErr: `"a/b"`},
		{name: "negative", in: "-1/20", wantErr: `"-1/20"`},
		{name: "empty point", in: "1/20,", wantErr: `""`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseW5Grid(tc.in)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// w5Fake is an in-memory graph that records the levels asked for.
type w5Fake struct {
	objs   map[string]*lookaheadv1.Object
	levels [][]string
}

func (f *w5Fake) fetch(_ context.Context, ids []string) ([]*lookaheadv1.Object, error) {
	f.levels = append(f.levels, ids)
	var out []*lookaheadv1.Object
	for _, id := range ids {
		if o, ok := f.objs[id]; ok {
			out = append(out, o)
		}
	}
	return out, nil
}

func w5Obj(id string, fieldIDs ...string) *lookaheadv1.Object {
	o := &lookaheadv1.Object{Id: id}
	for i := 0; i+1 < len(fieldIDs); i += 2 {
		o.Refs = append(o.Refs, &lookaheadv1.Ref{Field: fieldIDs[i], Id: fieldIDs[i+1]})
	}
	return o
}

func TestFirstRefs(t *testing.T) {
	o := w5Obj("u", "posts", "p2", "friends", "a", "posts", "p1", "friends", "b", "friends", "c")
	assert.Equal(t, []string{"a", "b"}, firstRefs("friends", 2)(o))
	assert.Equal(t, []string{"a", "b", "c"}, firstRefs("friends", 0)(o), "0 reads them all")
	assert.Equal(t, []string{"p2", "p1"}, firstRefs("posts", 5)(o))
	assert.Empty(t, firstRefs("likes", 1)(o))
	assert.Equal(t, []string{"p2", "a"}, bothSteps(firstRefs("posts", 1), firstRefs("friends", 1))(o))
}

func TestReadSessions(t *testing.T) {
	f := &w5Fake{objs: map[string]*lookaheadv1.Object{}}
	for _, o := range []*lookaheadv1.Object{
		w5Obj("u", "friends", "a", "friends", "b", "friends", "gone"),
		w5Obj("a", "friends", "u", "friends", "b", "friends", "c"),
		w5Obj("b", "friends", "u", "friends", "a"),
		w5Obj("c", "friends", "a", "friends", "d"),
		w5Obj("d"),
	} {
		f.objs[o.GetId()] = o
	}
	friends := firstRefs("friends", 0)
	fof := w5Session{Starts: []string{"u"}, Steps: []w5Step{friends, friends}}
	used, err := readSessions(context.Background(), []w5Session{fof, fof}, f.fetch)
	require.NoError(t, err)

	assert.Equal(t, map[string]bool{"u": true, "a": true, "b": true, "c": true}, used,
		"two hops from u, a missing id not counted, d three hops away")
	want := [][]string{{"u"}, {"a", "b", "gone"}, {"c"}} // each id once per session, cycles cut
	assert.Equal(t, append(want, want...), f.levels, "a repeated session reads again")
}

func TestW5SelectedPatternsKeepTheirSessions(t *testing.T) {
	w := &w5{cfg: W5Config{Patterns: []string{"hot spot", "friends of friends"}}}
	got, err := w.selected()
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "friends of friends", got[0].Name, "in the usual order")
	assert.Equal(t, "hot spot", got[1].Name)
	assert.Equal(t, uint64(2), got[1].seed, "drawn as when every pattern runs")

	w.cfg.Patterns = []string{"feed", "timeline"}
	_, err = w.selected()
	require.ErrorContains(t, err, `"timeline"`)
	assert.ErrorContains(t, err, `"hot spot"`, "the error lists the names")
}

// Readers at once each read their share of the sessions, dealt round-robin:
// every session is read once, and the objects used are all of theirs.
func TestReadAtOnce(t *testing.T) {
	objs := map[string]*lookaheadv1.Object{}
	for _, o := range []*lookaheadv1.Object{
		w5Obj("u", "friends", "a"), w5Obj("a"), w5Obj("v", "friends", "b"), w5Obj("b"), w5Obj("w", "friends", "a"),
	} {
		objs[o.GetId()] = o
	}
	var mu sync.Mutex
	starts := map[string]int{}
	fetch := func(_ context.Context, ids []string) ([]*lookaheadv1.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		var out []*lookaheadv1.Object
		for _, id := range ids {
			if id == "gone" {
				return nil, fmt.Errorf("fetch %s: failed", id)
			}
			starts[id]++
			out = append(out, objs[id])
		}
		return out, nil
	}
	friends := firstRefs("friends", 0)
	session := func(u string) w5Session { return w5Session{Starts: []string{u}, Steps: []w5Step{friends}} }
	used, err := readAtOnce(context.Background(), []w5Session{session("u"), session("v"), session("w")}, 2, fetch)
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"u": true, "a": true, "v": true, "b": true, "w": true}, used)
	assert.Equal(t, map[string]int{"u": 1, "v": 1, "w": 1, "a": 2, "b": 1}, starts, "each session once; a by two")

	_, err = readAtOnce(context.Background(), []w5Session{session("u"), session("gone")}, 2, fetch)
	assert.ErrorContains(t, err, "fetch gone", "a reader's error is the run's")
}

func TestW5ReadersPatternIsSelectedByName(t *testing.T) {
	w := &w5{cfg: W5Config{FoFReaders: 4, FoFStarts: 2, Patterns: []string{w5ReadersName(4)}}}
	got, err := w.selected()
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "friends of friends by 4 readers", got[0].Name)
	assert.Equal(t, 4, got[0].readers)

	w.cfg.FoFReaders, w.cfg.Patterns = 0, nil
	got, err = w.selected()
	require.NoError(t, err)
	assert.Len(t, got, 3, "no readers pattern without FoFReaders")
}
