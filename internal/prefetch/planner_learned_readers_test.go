package prefetch

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// Two readers, each reading its own user's friends and their friends,
// interleaved: a's follow does not close the lists b is reading beside it
// (b read after a's walk began), so none of b's friends' lists is decided
// not followed before b comes to them, and b's read of its first friend's
// first friend is a follow, one level down.
func TestLearnedReaderBesideKeepsItsLists(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	read := reader(l)
	read(user("ub", 3, "b"))
	read(user("b0", 3, "b0x"))
	read(user("ua", 3, "a")) // a's walk begins
	read(user("b1", 3, "b1x"))
	read(user("a0", 3, "a0x")) // a follows ua's list: b0's list was read before ua
	assert.Nil(t, l.stats[edgeKey{1, "User", "friends"}], "no list of b's friends decided")
	read(user("b2", 3, "b2x"))
	read(user("b0x0", 0, "")) // b goes on to its friends' friends
	assert.Equal(t, 2, l.Depth("b0x0"), "a follow of b0's list")
}

// One reader's walks come one after another: the next one's first follow
// closes the lists the last one left, as not followed.
func TestLearnedWalkAfterWalkClosesTheLastOnesLists(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	read := reader(l)
	read(user("ua", 2, "a"))
	read(user("a0", 3, "a0x"))
	read(user("a1", 3, "a1x"))
	read(user("ub", 2, "b"))
	read(user("b0", 3, "b0x")) // closes a0's and a1's lists
	s := l.stats[edgeKey{1, "User", "friends"}]
	require.NotNil(t, s)
	assert.Equal(t, 6.0, s.allOffered)
	assert.Zero(t, s.allFollowed)
}

// The walks remembered are bounded: random reads start one each.
func TestLearnedWalksRememberedAreBounded(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	for i := range 5000 {
		l.Read([]*graph.Object{user(fmt.Sprint("u", i), 2, fmt.Sprint("u", i, "f"))}, false, 0)
		require.LessOrEqual(t, len(l.walks), 5*activeWalk, "after %d reads", i+1)
	}
}

// BenchmarkLearnedReadersInterleaved reads 16 friends-of-friends walks
// over a social graph (graph.Social, 3,000 users) through the learned
// planner, one reader at a time or 2, 4 or 8 interleaved read by read,
// and reports the share of reads (the starts aside) whose parent gave them
// a chance of 1/8 or more just before they came (likely/read: what could
// have been fetched ahead of them), the share counted as follows, and the
// objects never read that some object read gave a chance of 1/8 or more,
// per object read (unread-likely/read: what could have been fetched for
// nothing).
func BenchmarkLearnedReadersInterleaved(b *testing.B) {
	g := graph.Social{Users: 3000, MaxFriends: 3000, DanglingRate: 0.001, PayloadBytes: 100, Seed: 1}
	byID := map[string]*graph.Object{}
	require.NoError(b, g.Generate(func(o *graph.Object) error { byID[o.ID] = o; return nil }))
	rng := rand.New(rand.NewPCG(1, 2))
	var walks [][]walkStep
	for len(walks) < 16 {
		if w := twoHopWalk(byID, graph.UserID(rng.IntN(3000))); len(w) >= 50 && len(w) <= 200 {
			walks = append(walks, w)
		}
	}
	for _, readers := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprint("readers=", readers), func(b *testing.B) {
			var reads, likely, follows int
			var read, wanted map[string]bool
			for range b.N {
				reads, likely, follows = 0, 0, 0
				read, wanted = map[string]bool{}, map[string]bool{}
				l := NewLearned(LearnedConfig{})
				for i := 0; i < len(walks); i += readers {
					group := walks[i:min(i+readers, len(walks))]
					next := make([]int, len(group))
					for more := true; more; {
						more = false
						for j, w := range group {
							if next[j] == len(w) {
								continue
							}
							more = true
							s := w[next[j]]
							next[j]++
							if s.parent != "" {
								reads++
								p := byID[s.parent]
								chances := l.Chances(p, l.Depth(s.parent), 0, nil)
								for k, r := range p.Refs {
									if r.ID == s.id && chances[k] >= 1.0/8 {
										likely++
										break
									}
								}
							}
							o := byID[s.id]
							l.Read([]*graph.Object{o}, true, 1500*time.Microsecond)
							if s.parent != "" && l.Depth(s.id) > 0 {
								follows++
							}
							read[s.id] = true
							for k, p := range l.Chances(o, l.Depth(s.id), 0, nil) {
								if p >= 1.0/8 {
									wanted[o.Refs[k].ID] = true
								}
							}
						}
					}
				}
			}
			b.ReportMetric(float64(likely)/float64(reads), "likely/read")
			b.ReportMetric(float64(follows)/float64(reads), "follows/read")
			unread := 0
			for id := range wanted {
				if !read[id] {
					unread++
				}
			}
			b.ReportMetric(float64(unread)/float64(len(read)), "unread-likely/read")
		})
	}
}

// twoHopWalk is a friends-of-friends walk from u, level by level,
// each user once: each step with the user whose list it was read from.
func twoHopWalk(byID map[string]*graph.Object, u string) []walkStep {
	out := []walkStep{{u, ""}}
	seen := map[string]bool{u: true}
	level := []string{u}
	for range 2 {
		var below []string
		for _, id := range level {
			for _, r := range byID[id].Refs {
				if r.Field == graph.FieldFriends && byID[r.ID] != nil && !seen[r.ID] {
					seen[r.ID] = true
					below = append(below, r.ID)
					out = append(out, walkStep{r.ID, id})
				}
			}
		}
		level = below
	}
	return out
}

// walkStep is a read of a walk: the id, and the user whose list it was
// read from ("" for the start).
type walkStep struct{ id, parent string }

// A read asked for directly that a list of the walk read last offers (the
// k-th child of the object read just before, down a random branch) goes on
// in that walk; one no list of it offers starts a walk of its own.
func TestLearnedDirectReadOfferedByTheLastWalkGoesOnInIt(t *testing.T) {
	l := NewLearned(LearnedConfig{})
	read := reader(l)
	read(user("u", 6, "f"))
	read(user("f3", 2, "g")) // not in order: asked for directly
	assert.Zero(t, l.Depth("f3"))
	assert.Equal(t, "u", l.open.latest("f3").root, "u's walk")
	read(user("v", 2, "h"))
	assert.Equal(t, "v", l.open.latest("v").root, "a walk of its own")
}
