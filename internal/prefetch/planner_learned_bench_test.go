package prefetch

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/fetch/fetchtest"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// BenchmarkLearnedWalkAhead is BenchmarkHit's walk with a demand round trip
// measured (rtt): every object cached, the trees read breadth first, and the
// learned planner keeping the levels due within two round trips on their
// way, which a read's job walks through when they are held (W1 at 1 and 5
// ms). cpu-ns/op is the process's CPU per read, jobs included.
func BenchmarkLearnedWalkAhead(b *testing.B) {
	objs := fetchtest.Tree(b, 4, 6) // 1365 objects
	order := breadthFirst(objs)
	for _, rtt := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond} {
		b.Run(fmt.Sprint("rtt=", rtt), func(b *testing.B) {
			r := newRigWith(b, newFakeOrigin(objs), Config{Mode: ModeAdaptive}, fetch.Config{}, NewLearned(LearnedConfig{}), cache.Config{})
			for range warmSamples {
				r.engine.s.win.demand(1, rtt)
			}
			hit := func(id string) {
				if _, _, err := r.engine.Get(context.Background(), []string{id}, Hint{}); err != nil {
					b.Error(err)
				}
				r.engine.s.Idle()
			}
			for range 3 {
				for _, id := range order {
					hit(id)
				}
			}
			cpu := cpuTime()
			b.ResetTimer()
			for i := range b.N {
				hit(order[i%len(order)])
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkLearnedHub is the learned planner's own cost on a hub of 10,000
// refs read as a star is (W7): the hub, then its first two refs. Chances is
// one call on the hub while its list is being read, as the scheduler makes
// at least twice per read of it (offers, candidates); Read is one visit,
// the hub and its two leaves. What can be offered or fetched of the hub is
// its first offersPerList refs and a few positions past the longest run
// read, so its size should cost little.
func BenchmarkLearnedHub(b *testing.B) {
	h := hub("h", 10000)
	leaves := []*graph.Object{node(h.Refs[0].ID), node(h.Refs[1].ID)}
	visit := func(l *Learned) {
		l.Read([]*graph.Object{h}, true, 0)
		for _, o := range leaves {
			l.Read([]*graph.Object{o}, true, 0)
		}
	}
	learned := func() *Learned {
		l := NewLearned(LearnedConfig{})
		for range 20 {
			visit(l)
		}
		return l
	}
	b.Run("op=Chances", func(b *testing.B) {
		l := learned()
		l.Read([]*graph.Object{h}, true, 0)
		l.Read(leaves[:1], true, 0)
		var buf []float64
		for b.Loop() {
			buf = l.Chances(h, 0, 0, buf)
		}
		if buf[1] == 0 {
			b.Fatal("the hub's second ref has no chance: the planner did not learn the star")
		}
	})
	b.Run("op=Read", func(b *testing.B) {
		l := learned()
		b.ReportAllocs()
		for b.Loop() {
			visit(l)
		}
	})
}

// BenchmarkLearnedFriendsOfFriends is W5's friends of friends in process:
// on W5's social graph (2,000 users, hubs of up to 3,000 friends), an op is
// 40 sessions, each from another user, on a fresh sidecar (planner and
// cache, made with the timer stopped): the user, its friends, their
// friends, one Get per object, at most 100 a level, each once, against an
// origin with Expand that answers at once. It measures what the learned
// planner costs per read where lists are long (offers, their expiry and
// Chances over the levels a job walks), against prefetch mode off.
func BenchmarkLearnedFriendsOfFriends(b *testing.B) {
	var objs []*graph.Object
	g := graph.Social{Users: 2000, MaxFriends: 3000, DanglingRate: 0.01, PayloadBytes: 100, Seed: 1}
	if err := g.Generate(func(o *graph.Object) error { objs = append(objs, o); return nil }); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []Mode{ModeOff, ModeAdaptive} {
		b.Run("mode="+string(mode), func(b *testing.B) {
			reads := 0
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				var p Planner = Static{}
				if mode == ModeAdaptive {
					p = NewLearned(LearnedConfig{})
				}
				r := newRigWith(b, &fakeExpander{Origin: newFakeOrigin(objs)}, Config{Mode: mode}, fetch.Config{}, p, cache.Config{})
				start := cpuTime()
				b.StartTimer()
				for s := range 40 {
					reads += friendsOfFriends(b, r, graph.UserID(s*47%g.Users), 100)
				}
				r.engine.s.Idle()
				b.StopTimer()
				cpu += cpuTime() - start
				r.engine.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(reads), "ns/read")
			b.ReportMetric(float64(cpu)/float64(reads), "cpu-ns/read")

		})
	}
}

// friendsOfFriends reads user, its friends and their friends, at most
// perLevel of each level, and returns how many Gets it made.
func friendsOfFriends(b *testing.B, r *rig, user string, perLevel int) int {
	seen := map[string]bool{user: true}
	level, reads := []string{user}, 0
	for l := 0; l < 3 && len(level) > 0; l++ {
		var next []string
		for _, id := range level {
			rs, _, err := r.engine.Get(context.Background(), []string{id}, Hint{})
			if err != nil {
				b.Fatal(err)
			}
			reads++
			if len(rs) == 0 || l == 2 {
				continue
			}
			for _, ref := range rs[0].Object.Refs {
				if ref.Field == "friends" && !seen[ref.ID] && len(next) < perLevel {
					seen[ref.ID] = true
					next = append(next, ref.ID)
				}
			}
		}
		level = next
	}
	return reads
}

// BenchmarkLearnedReadFriendsOfFriends is the learner alone on
// BenchmarkLearnedFriendsOfFriends' reads: the 40 sessions' objects, in
// their order, told to one Learned as the scheduler tells it of each
// answered Get (ReadAt), with no scheduler, cache or jobs. Every friend
// read offers its list (up to offersPerList refs), and each offer is
// claimed, passed by or expired: what a read costs the learner where lists
// are long.
func BenchmarkLearnedReadFriendsOfFriends(b *testing.B) {
	byID := map[string]*graph.Object{}
	g := graph.Social{Users: 2000, MaxFriends: 3000, DanglingRate: 0.01, PayloadBytes: 100, Seed: 1}
	if err := g.Generate(func(o *graph.Object) error { byID[o.ID] = o; return nil }); err != nil {
		b.Fatal(err)
	}
	var order []*graph.Object // the sessions' reads
	for s := range 40 {
		user := graph.UserID(s * 47 % g.Users)
		seen := map[string]bool{user: true}
		level := []string{user}
		for l := 0; l < 3 && len(level) > 0; l++ {
			var next []string
			for _, id := range level {
				o := byID[id]
				if o == nil {
					continue
				}
				order = append(order, o)
				for _, ref := range o.Refs {
					if l < 2 && ref.Field == "friends" && !seen[ref.ID] && len(next) < 100 {
						seen[ref.ID] = true
						next = append(next, ref.ID)
					}
				}
			}
			level = next
		}
	}
	at := time.Unix(0, 0)
	l := NewLearned(LearnedConfig{})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		at = at.Add(100 * time.Microsecond)
		l.ReadAt(at, order[i%len(order):i%len(order)+1], false, time.Millisecond)
		i++
	}
}

// BenchmarkLearnedLongListsMemory is what the learned planner holds after
// reads of many objects with long lists: 300 requests, within one
// horizon, of 20 objects each with 8 lists of 300 refs (48,000 refs a
// request). retained-MB is the heap left after them, the objects' refs
// the planner keeps alive included; offers is how many it remembers.
func BenchmarkLearnedLongListsMemory(b *testing.B) {
	reads := make([][]*graph.Object, 300)
	for r := range reads {
		for k := range 20 {
			o := &graph.Object{ID: fmt.Sprintf("o-%d-%d", r, k), Type: "T"}
			for f := range 8 {
				for i := range 300 {
					o.Refs = append(o.Refs, graph.Ref{Field: fmt.Sprint("f", f), ID: fmt.Sprintf("c-%d-%d-%d-%d", r, k, f, i)})
				}
			}
			reads[r] = append(reads[r], o)
		}
	}
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for b.Loop() {
		base := heap()
		l := NewLearned(LearnedConfig{})
		for _, objs := range reads {
			l.Read(objs, false, 0)
		}
		b.ReportMetric(float64(heap()-base)/(1<<20), "retained-MB")
		b.ReportMetric(float64(l.ring.len()), "offers")
		runtime.KeepAlive(l)
	}
}
