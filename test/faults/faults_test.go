package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// Breaker settings of the suite: a short cool-down keeps the cases quick.
const cooldown = time.Second

var _ = Describe("the origin link under faults", func() {
	var (
		l        *link
		s        *sidecar
		baseline float64 // sidecar goroutines, warm, before the fault
	)

	// warm caches the whole tree of task-0 (and nothing of the others) and
	// takes the goroutine baseline.
	warm := func(args ...string) {
		o := startOrigin()
		l = newLink(o.GRPC)
		s = startSidecar(l.Listen, append([]string{"--origin-breaker-cooldown", cooldown.String()}, args...)...)
		ids, err := s.graphOf(10*time.Second, "task-0", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(ids).To(Equal(treeIDs("task-0")))
		baseline = s.goroutines()
	}

	// expectCachedServed walks task-0 from the cache while the origin is
	// unreachable.
	expectCachedServed := func() {
		GinkgoHelper()
		ids, err := s.graphOf(2*time.Second, "task-0", nil)
		Expect(err).NotTo(HaveOccurred(), "cached tree served")
		Expect(ids).To(Equal(treeIDs("task-0")))
		o, err := s.get(time.Second, "task-0.17")
		Expect(err).NotTo(HaveOccurred())
		expectExact(o)
	}

	It("origin down, then back: cached served, the rest UNAVAILABLE at once, the breaker stops the hammering", func() {
		warm()
		l.down()

		expectCachedServed()
		start := time.Now()
		_, err := s.get(5*time.Second, "task-1.1")
		failFast := time.Since(start)
		Expect(code(err)).To(Equal(codes.Unavailable), "%v", err)

		// Hammer uncached ids until the breaker is open.
		Eventually(func() float64 {
			_, err := s.get(5*time.Second, "task-1.2")
			Expect(code(err)).To(Equal(codes.Unavailable))
			return s.metric("lookahead_origin_breaker_state")
		}).WithTimeout(5*time.Second).WithPolling(time.Millisecond).Should(Equal(1.0), "breaker open")

		// While open, for a few cool-downs: hundreds of requests, and only
		// the half-open probes (one per cool-down) reach the origin.
		rt0, rej0 := s.dataRoundTrips(), s.metric("lookahead_origin_breaker_rejections_total")
		t0 := time.Now()
		n, openErrs := 0, 0
		for time.Since(t0) < 5*cooldown/2 {
			_, err := s.get(5*time.Second, fmt.Sprintf("task-%d.%d", 1+n%3, 1+n%780))
			Expect(code(err)).To(Equal(codes.Unavailable))
			if strings.Contains(err.Error(), "origin circuit open") {
				openErrs++
			}
			n++
			time.Sleep(5 * time.Millisecond) // pacing of the load, not a synchronisation
		}
		window := time.Since(t0)
		rt1, rej1 := s.dataRoundTrips(), s.metric("lookahead_origin_breaker_rejections_total")
		probes := int(window/cooldown) + 1
		Expect(rt1-rt0).To(BeNumerically(">=", 1), "half-open probes went out")
		Expect(rt1-rt0).To(BeNumerically("<=", 2*probes), "round trips while open: probes only (each retried at most once before the breaker refuses)")
		Expect(rej1 - rej0).To(BeNumerically(">=", n-2*probes))
		Expect(openErrs).To(BeNumerically(">=", n-2*probes), "the status says why")

		l.up()
		var recovered time.Duration
		back := time.Now()
		s.waitOriginServes()
		recovered = time.Since(back)
		Expect(s.metric("lookahead_origin_breaker_state")).To(Equal(0.0), "closed again")
		s.expectWholeDataset()
		g := s.settle(baseline)
		record("first uncached Get UNAVAILABLE after %v; %d requests in %v while open: %v round trips (probes), %v rejections; service back %v after the origin; goroutines %v → %v",
			failFast.Round(time.Millisecond), n, window.Round(time.Millisecond), rt1-rt0, rej1-rej0, recovered.Round(time.Millisecond), baseline, g)
	})

	It("latency beyond the caller's deadline: DEADLINE_EXCEEDED at the deadline, cached served, no breaker trip", func() {
		warm()
		remove := l.toxic("latency", "downstream", `{"latency": 3000}`)

		expectCachedServed()
		const deadline = 300 * time.Millisecond
		var worst time.Duration
		for i := 0; i < 5; i++ {
			start := time.Now()
			_, err := s.get(deadline, fmt.Sprintf("task-2.%d", i+1))
			worst = max(worst, time.Since(start))
			Expect(code(err)).To(Equal(codes.DeadlineExceeded), "%v", err)
		}
		Expect(s.metric("lookahead_origin_breaker_state")).To(Equal(0.0), "a slow origin is not a dead one: the callers' deadlines bound the wait")
		remove()
		s.waitOriginServes()
		s.expectWholeDataset()
		g := s.settle(baseline)
		record("uncached Gets with a %v deadline: DEADLINE_EXCEEDED, slowest after %v; breaker stayed closed; goroutines %v → %v",
			deadline, worst.Round(time.Millisecond), baseline, g)
	})

	It("connection reset mid-GetGraph: the stream fails UNAVAILABLE, what arrived is exact, nothing partial is cached", func() {
		o := startOrigin("--latency", "100ms")
		l = newLink(o.GRPC)
		// Level by level, so that the walk is mid-way when the link breaks.
		s = startSidecar(l.Listen, "--no-expand", "--prefetch-mode", "off", "--origin-breaker-cooldown", cooldown.String())
		baseline = s.goroutines()
		var (
			got    int
			remove func()
		)
		start := time.Now()
		ids, err := s.graphOf(10*time.Second, "task-1", func(*lookaheadv1.Object) {
			if got++; got == 6 { // levels 0 and 1 are in: break the link under level 2's fetch
				remove = l.toxic("reset_peer", "downstream", `{"timeout": 0}`)
			}
		})
		failed := time.Since(start)
		Expect(code(err)).To(Equal(codes.Unavailable), "%v", err)
		full := treeIDs("task-1")
		Expect(ids).To(HaveLen(6), "the walk broke off after level 1")
		Expect(ids).To(Equal(full[:len(ids)]), "what arrived is a breadth-first prefix, each object exact")
		remove()
		s.waitOriginServes()
		s.expectWholeDataset()
		g := s.settle(baseline)
		record("GetGraph of 781 objects broke off after %d objects with UNAVAILABLE after %v; every object received exact; full dataset exact after; goroutines %v → %v",
			len(ids), failed.Round(time.Millisecond), baseline, g)
	})

	It("bandwidth throttled: cached served, an uncached graph ends at its deadline, full service after", func() {
		warm()
		remove := l.toxic("bandwidth", "downstream", `{"rate": 4}`) // KB/s: a tree is ~60 KB
		expectCachedServed()
		start := time.Now()
		ids, err := s.graphOf(time.Second, "task-2", nil)
		took := time.Since(start)
		Expect(code(err)).To(Equal(codes.DeadlineExceeded), "%v", err)
		Expect(ids).To(Equal(treeIDs("task-2")[:len(ids)]), "a breadth-first prefix, each object exact")
		Expect(s.metric("lookahead_origin_breaker_state")).To(Equal(0.0))
		remove()
		s.waitOriginServes()
		s.expectWholeDataset()
		g := s.settle(baseline)
		record("uncached GetGraph with a 1s deadline at 4 KB/s: DEADLINE_EXCEEDED after %v with %d of 781 objects, all exact; goroutines %v → %v",
			took.Round(time.Millisecond), len(ids), baseline, g)
	})

	It("flapping origin: only OK, UNAVAILABLE or DEADLINE_EXCEEDED, every answer exact, full service after", func() {
		warm()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		flaps := 0
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(150 * time.Millisecond):
				}
				if flaps%2 == 0 {
					l.down()
				} else {
					l.up()
				}
				flaps++
			}
		}()
		var mu sync.Mutex
		byCode := map[codes.Code]int{}
		deadline := time.Now().Add(3 * time.Second)
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				for i := 0; time.Now().Before(deadline); i++ {
					var err error
					if i%10 == 0 {
						_, err = s.graphOf(time.Second, dataset.RootID((w+i)%4), nil)
					} else {
						// Get, check and drop again, so that every Get goes
						// to the origin through the flapping link.
						id := fmt.Sprintf("task-%d.%d", (w+i)%4, (w*97+i)%781)
						var o *lookaheadv1.Object
						o, err = s.get(time.Second, id)
						if err == nil {
							expectExact(o)
							_, ierr := s.c.Service().Invalidate(context.Background(), &lookaheadv1.InvalidateRequest{Ids: []string{id}})
							Expect(ierr).NotTo(HaveOccurred())
						}
					}
					mu.Lock()
					byCode[code(err)]++
					mu.Unlock()
				}
			}()
		}
		time.Sleep(3 * time.Second) // the length of the experiment, not a synchronisation
		close(stop)
		wg.Wait()
		if flaps%2 == 1 {
			l.up()
		}
		for c := range byCode {
			Expect(c).To(BeElementOf(codes.OK, codes.Unavailable, codes.DeadlineExceeded))
		}
		Expect(byCode[codes.OK]).To(BeNumerically(">", 0))
		s.waitOriginServes()
		s.expectWholeDataset()
		g := s.settle(baseline)
		record("%d flaps in 3s under 8 clients: %d OK, %d UNAVAILABLE, %d DEADLINE_EXCEEDED, nothing else; full dataset exact after; goroutines %v → %v",
			flaps, byCode[codes.OK], byCode[codes.Unavailable], byCode[codes.DeadlineExceeded], baseline, g)
	})
})

var _ = Describe("a stampede", func() {
	It("turns 1000 concurrent Gets of one uncached id into exactly one origin BatchGet", func() {
		o := startOrigin("--latency", "300ms")
		s := startSidecar(o.GRPC, "--prefetch-mode", "off")
		before := s.metric("lookahead_origin_round_trips_total", "rpc", "BatchGet")
		const n = 1000
		start := make(chan struct{})
		errs := make(chan error, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				o, _, err := s.c.Get(context.Background(), "task-2.3", nil)
				if err == nil && o.GetId() != "task-2.3" {
					err = fmt.Errorf("got %q", o.GetId())
				}
				errs <- err
			}()
		}
		t0 := time.Now()
		close(start)
		wg.Wait()
		took := time.Since(t0)
		close(errs)
		for err := range errs {
			Expect(err).NotTo(HaveOccurred())
		}
		trips := s.metric("lookahead_origin_round_trips_total", "rpc", "BatchGet") - before
		Expect(trips).To(Equal(1.0))
		joined := s.metric("lookahead_inflight_joins_total")
		hits := s.metric("lookahead_cache_hits_total")
		Expect(joined + hits).To(Equal(float64(n - 1)))
		record("%d concurrent Gets in %v: %v origin BatchGet, %v joined the flight, %v hit the cache after it landed",
			n, took.Round(time.Millisecond), trips, joined, hits)
	})
})
