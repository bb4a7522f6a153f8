package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// op is one operation of a recorded history.
type op struct {
	sidecar    int // whose reads are checked together: a sidecar, or an application with a near cache
	id         string
	write      bool
	version    uint64 // read: version returned; write: version assigned
	start, end time.Time
}

// checkHistory returns the violations of what lookahead promises per
// sidecar (or near-cache application) and id: reads never go back in
// version (a read that starts after another ended returns at least its
// version), and its own writes are visible to every read through it that
// starts after the write returned. Changes made elsewhere are covered by the
// first rule once any read has seen them, and by the convergence check at
// the end. It sorts once per key and sweeps, so that histories of hundreds
// of thousands of operations check in well under a second.
func checkHistory(ops []op) []string {
	type key struct {
		sidecar int
		id      string
	}
	by := map[key][]op{}
	for _, o := range ops {
		k := key{o.sidecar, o.id}
		by[k] = append(by[k], o)
	}
	var bad []string
	for k, list := range by {
		ended := slices.Clone(list)
		sort.Slice(ended, func(i, j int) bool { return ended[i].end.Before(ended[j].end) })
		reads := slices.DeleteFunc(list, func(o op) bool { return o.write })
		sort.Slice(reads, func(i, j int) bool { return reads[i].start.Before(reads[j].start) })
		var newest *op // the newest version among operations ended so far
		next := 0
		for _, r := range reads {
			for ; next < len(ended) && ended[next].end.Before(r.start); next++ {
				if newest == nil || ended[next].version > newest.version {
					newest = &ended[next]
				}
			}
			if newest == nil || newest.version <= r.version {
				continue
			}
			what := "read"
			if newest.write {
				what = "own write"
			}
			bad = append(bad, fmt.Sprintf("sidecar %d %s: read at %s returned v%d after a %s that finished at %s with v%d",
				k.sidecar, k.id, r.start.Format("15:04:05.000000"), r.version, what, newest.end.Format("15:04:05.000000"), newest.version))
		}
	}
	return bad
}

var _ = Describe("coherence across sidecars", func() {
	var a, b *sidecar
	BeforeEach(func() {
		origin := startOrigin().GRPC
		a = startSidecar(origin, "--watch-grace", "2s")
		b = startSidecar(origin, "--watch-grace", "2s")
		Eventually(func() float64 { return a.metric("lookahead_watch_connected") + b.metric("lookahead_watch_connected") }).Should(Equal(2.0))
	})

	It("shows a write through one sidecar at once there, and through the change stream on the other", func() {
		ctx := context.Background()
		for _, s := range []*sidecar{a, b} {
			obj, _, err := s.c.Get(ctx, "task-0.1", nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(obj.GetVersion()).To(Equal(uint64(1)))
		}
		v := uint64(1)
		put, err := a.c.Service().Put(ctx, &lookaheadv1.PutRequest{
			Object: &lookaheadv1.Object{Id: "task-0.1", Type: "Task", Payload: []byte("edited")}, ExpectedVersion: &v})
		Expect(err).NotTo(HaveOccurred())
		obj, _, err := a.c.Get(ctx, "task-0.1", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(obj.GetVersion()).To(Equal(put.GetVersion()), "read your own write")
		Eventually(func() uint64 {
			obj, _, err := b.c.Get(ctx, "task-0.1", nil)
			Expect(err).NotTo(HaveOccurred())
			return obj.GetVersion()
		}).Should(Equal(put.GetVersion()), "the other sidecar learns of it from Watch")
		Expect(b.metric("lookahead_watch_changes_total")).To(BeNumerically(">=", 1))

		_, err = b.c.Service().Put(ctx, &lookaheadv1.PutRequest{Object: &lookaheadv1.Object{Id: "task-0.1"}, ExpectedVersion: &v})
		Expect(err).To(MatchError(ContainSubstring("FailedPrecondition")), "a write at a stale version is refused")
	})

	It("never returns an older version after a newer one was seen or written (recorded history)", func() {
		ids := []string{"task-1.1", "task-1.2", "task-1.3"}
		sidecars := []*sidecar{a, b}
		var (
			mu      sync.Mutex
			history []op
			wg      sync.WaitGroup
		)
		record := func(o op) { mu.Lock(); history = append(history, o); mu.Unlock() }
		// Loops stop on a clock; calls have no deadline to race with it.
		ctx := context.Background()
		stop := time.Now().Add(2 * time.Second)
		running := func() bool { return time.Now().Before(stop) }
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				s := sidecars[w%2]
				for i := 0; running(); i++ {
					id := ids[(w+i)%len(ids)]
					start := time.Now()
					resp, err := s.c.Service().Put(ctx, &lookaheadv1.PutRequest{
						Object: &lookaheadv1.Object{Id: id, Type: "Task", Payload: []byte(fmt.Sprintf("w%d-%d", w, i))}})
					Expect(err).NotTo(HaveOccurred())
					record(op{sidecar: w % 2, id: id, write: true, version: resp.GetVersion(), start: start, end: time.Now()})
				}
			}()
		}
		for r := 0; r < 8; r++ {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				s := sidecars[r%2]
				for i := 0; running(); i++ {
					id := ids[(r+i)%len(ids)]
					start := time.Now()
					obj, _, err := s.c.Get(ctx, id, nil)
					Expect(err).NotTo(HaveOccurred())
					record(op{sidecar: r % 2, id: id, version: obj.GetVersion(), start: start, end: time.Now()})
				}
			}()
		}
		wg.Wait()
		writes := 0
		for _, o := range history {
			if o.write {
				writes++
			}
		}
		GinkgoWriter.Printf("history: %d operations, %d writes\n", len(history), writes)
		Expect(writes).To(BeNumerically(">", 20), "the history has enough writes to mean something")
		Expect(checkHistory(history)).To(BeEmpty())

		// Convergence: once writes stop, both sidecars answer the last version.
		final := map[string]uint64{}
		for _, o := range history {
			if o.write && o.version > final[o.id] {
				final[o.id] = o.version
			}
		}
		for _, s := range sidecars {
			for id, v := range final {
				Eventually(func() uint64 {
					obj, _, err := s.c.Get(context.Background(), id, nil)
					Expect(err).NotTo(HaveOccurred())
					return obj.GetVersion()
				}).Should(Equal(v), "%s converges", id)
			}
		}
	})
})

var _ = Describe("the checker", func() {
	It("catches a read that goes back in version", func() {
		t0 := time.Now()
		ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
		Expect(checkHistory([]op{
			{sidecar: 0, id: "a", version: 3, start: ms(0), end: ms(1)},
			{sidecar: 0, id: "a", version: 2, start: ms(2), end: ms(3)},
		})).To(HaveLen(1))
		Expect(checkHistory([]op{
			{sidecar: 0, id: "a", write: true, version: 5, start: ms(0), end: ms(1)},
			{sidecar: 0, id: "a", version: 4, start: ms(2), end: ms(3)},
		})).To(HaveLen(1))
		Expect(checkHistory([]op{
			{sidecar: 0, id: "a", version: 3, start: ms(0), end: ms(5)},
			{sidecar: 0, id: "a", version: 2, start: ms(2), end: ms(3)}, // overlapping: allowed
			{sidecar: 1, id: "a", version: 1, start: ms(6), end: ms(7)}, // other sidecar: allowed
		})).To(BeEmpty())
	})
})
