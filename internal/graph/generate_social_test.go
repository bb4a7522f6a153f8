package graph_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// socialGraph indexes a generated social graph.
type socialGraph struct {
	byID     map[string]*graph.Object
	byType   map[string]int
	friends  map[string][]string // user → friend ids, in ref order
	isFriend map[[2]string]bool  // {a, b}: b is among a's friends
	dangling int
	inDegree map[string]int
}

func newSocialGraph(t *testing.T, g graph.Social) *socialGraph {
	t.Helper()
	s := &socialGraph{byID: map[string]*graph.Object{}, byType: map[string]int{},
		friends: map[string][]string{}, isFriend: map[[2]string]bool{}, inDegree: map[string]int{}}
	for _, o := range generated(t, g.Generate) {
		_, dup := s.byID[o.ID]
		if err := o.Validate(); dup || err != nil {
			t.Fatalf("%s: twice %v, invalid: %v", o.ID, dup, err)
		}
		s.byID[o.ID] = o
		s.byType[o.Type]++
	}
	for _, o := range s.byID {
		for _, r := range o.Refs {
			if strings.HasPrefix(r.ID, graph.DeletedPrefix) {
				s.dangling++
				continue
			}
			s.inDegree[r.ID]++
			if r.Field == graph.FieldFriends {
				s.friends[o.ID] = append(s.friends[o.ID], r.ID)
				s.isFriend[[2]string{o.ID, r.ID}] = true
			}
		}
	}
	return s
}

// refs returns o's ref ids of one field, in order, without dangling ones.
func refsOf(o *graph.Object, field string) []string {
	var ids []string
	for _, r := range o.Refs {
		if r.Field == field && !strings.HasPrefix(r.ID, graph.DeletedPrefix) {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// num is the index in an id such as "post-12".
func num(t *testing.T, id string) int {
	n, err := strconv.Atoi(id[strings.LastIndexByte(id, '-')+1:])
	if err != nil {
		t.Fatalf("id %s: %v", id, err)
	}
	return n
}

func TestSocialShape(t *testing.T) {
	g := graph.Social{Users: 5000, DanglingRate: 0.01, PayloadBytes: 8, Seed: 1}
	s := newSocialGraph(t, g)

	assert.Equal(t, 5000, s.byType[graph.SocialUser])
	assert.Equal(t, 1000, s.byType[graph.SocialProduct], "Users/5 products by default")
	assert.InDelta(t, g.Approx(), len(s.byID), 0.2*float64(g.Approx()), "Approx is about right")

	wantType := map[string]string{
		graph.FieldPosts: graph.SocialPost, graph.FieldFriends: graph.SocialUser, graph.FieldLikes: graph.SocialProduct,
		graph.FieldAuthor: graph.SocialUser, graph.FieldComments: graph.SocialComment, graph.FieldProduct: graph.SocialProduct,
		graph.FieldPost: graph.SocialPost, graph.FieldSeller: graph.SocialUser, graph.FieldSimilar: graph.SocialProduct,
	}
	for _, o := range s.byID {
		if len(o.Payload) != 8 {
			t.Errorf("%s: %d payload bytes, want 8", o.ID, len(o.Payload))
		}
		for _, r := range o.Refs {
			to, ok := s.byID[r.ID]
			if strings.HasPrefix(r.ID, graph.DeletedPrefix) {
				assert.False(t, ok, "%s is deleted", r.ID)
				continue
			}
			require.True(t, ok, "%s → %s: no such object", o.ID, r.ID)
			if to.Type != wantType[r.Field] {
				assert.Equal(t, wantType[r.Field], to.Type, "%s.%s → %s", o.ID, r.Field, r.ID)
			}
		}
	}
	assert.Positive(t, s.dangling, "a few refs to deleted objects")
	assert.Less(t, s.dangling, len(s.byID)/10)

	t.Run("friendship goes both ways", func(t *testing.T) {
		for u, fs := range s.friends {
			if s.isFriend[[2]string{u, u}] {
				t.Errorf("%s is their own friend", u)
			}
			if n := len(slices.Compact(slices.Sorted(slices.Values(fs)))); n != len(fs) {
				t.Errorf("%s: %d friends, %d distinct", u, len(fs), n)
			}
			for _, f := range fs {
				if !s.isFriend[[2]string{f, u}] {
					t.Errorf("%s is a friend of %s but not the other way", f, u)
				}
			}
		}
	})
	t.Run("friend counts follow a power law with hubs", func(t *testing.T) {
		var counts []int
		for i := range 5000 {
			counts = append(counts, len(s.friends[graph.UserID(i)]))
		}
		slices.Sort(counts)
		hubs := 0
		for _, c := range counts {
			if c >= 1000 {
				hubs++
			}
		}
		assert.LessOrEqual(t, counts[len(counts)-1], 3000, "MaxFriends caps friends")
		assert.GreaterOrEqual(t, hubs, 3, "users with 1,000 to 3,000 friends")
		assert.LessOrEqual(t, counts[len(counts)/2], 5, "the median user has a handful")
	})
	t.Run("popular products are shared", func(t *testing.T) {
		top := 0
		for i := range 1000 {
			top = max(top, s.inDegree[graph.ProductID(i)])
		}
		assert.GreaterOrEqual(t, top, 100, "the most popular product's referrers")
	})
	t.Run("lists are most recent first", func(t *testing.T) {
		for _, o := range s.byID {
			for _, field := range []string{graph.FieldPosts, graph.FieldComments} {
				ids := refsOf(o, field)
				for i := 1; i < len(ids); i++ {
					if num(t, ids[i-1]) <= num(t, ids[i]) {
						t.Errorf("%s.%s: %s before %s", o.ID, field, ids[i-1], ids[i])
					}
				}
			}
		}
	})
	t.Run("comments close cycles", func(t *testing.T) {
		for _, o := range s.byID {
			if o.Type != graph.SocialComment {
				continue
			}
			post := s.byID[refsOf(o, graph.FieldPost)[0]]
			if !slices.Contains(refsOf(post, graph.FieldComments), o.ID) {
				t.Errorf("%s does not list its comment %s", post.ID, o.ID)
			}
			author := refsOf(post, graph.FieldAuthor)[0]
			if !slices.Contains(refsOf(s.byID[author], graph.FieldPosts), post.ID) {
				t.Errorf("%s does not list their post %s", author, post.ID)
			}
			by := refsOf(o, graph.FieldAuthor)[0]
			if len(s.friends[author]) > 0 && !s.isFriend[[2]string{author, by}] {
				t.Errorf("%s: %s comments on %s's post but is not their friend", o.ID, by, author)
			}
		}
	})
}

func TestSocialKnobs(t *testing.T) {
	cases := []struct {
		name       string
		g          graph.Social
		users      int
		maxFriends int
		noDangling bool
	}{
		{name: "no users, nothing", g: graph.Social{}},
		{name: "one user has no friends", g: graph.Social{Users: 1, Products: 1}, users: 1, maxFriends: 0},
		{name: "MaxFriends caps hubs", g: graph.Social{Users: 2000, MaxFriends: 50}, users: 2000, maxFriends: 50},
		{name: "hubs capped by the users there are", g: graph.Social{Users: 100}, users: 100, maxFriends: 99},
		{name: "no dangling refs by default", g: graph.Social{Users: 500}, users: 500, maxFriends: 499, noDangling: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSocialGraph(t, tc.g)
			assert.Equal(t, tc.users, s.byType[graph.SocialUser])
			if tc.users == 0 {
				assert.Empty(t, s.byID)
				return
			}
			most := 0
			for _, fs := range s.friends {
				most = max(most, len(fs))
			}
			assert.LessOrEqual(t, most, tc.maxFriends)
			if tc.noDangling {
				assert.Zero(t, s.dangling)
			}
		})
	}
}

func TestSocialFirstRefsArePosts(t *testing.T) {
	// A user's refs start with their own posts, newest first, then friends:
	// the first refs of an object are what a profile or feed shows.
	s := newSocialGraph(t, graph.Social{Users: 200, Seed: 3})
	for i := range 200 {
		u := s.byID[graph.UserID(i)]
		seenOther := false
		for _, r := range u.Refs {
			if r.Field != graph.FieldPosts {
				seenOther = true
				continue
			}
			assert.False(t, seenOther, "%s: a post after another field", u.ID)
		}
	}
}
