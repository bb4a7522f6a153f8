package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/lookahead-dev/lookahead"
	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// nearRun sizes the near-cache history: LOOKAHEAD_NEAR_SECONDS of traffic
// (default 2, as CI runs it), longer if needed to record
// LOOKAHEAD_NEAR_MIN_OPS operations (default 10,000). The soak version: LOOKAHEAD_NEAR_SECONDS=30
// LOOKAHEAD_NEAR_MIN_OPS=100000.
func nearRun() (time.Duration, int) {
	secs, ops := 2, 10000
	if v, err := strconv.Atoi(os.Getenv("LOOKAHEAD_NEAR_SECONDS")); err == nil && v > 0 {
		secs = v
	}
	if v, err := strconv.Atoi(os.Getenv("LOOKAHEAD_NEAR_MIN_OPS")); err == nil && v > 0 {
		ops = v
	}
	return time.Duration(secs) * time.Second, ops
}

// app is an application with a near cache, connected to a sidecar through a
// proxy that the test cuts now and then.
type app struct {
	index int
	c     *lookahead.Client
}

var _ = Describe("coherence with near caches", func() {
	It("keeps every application's reads monotonic and its own writes visible, through writers, Watch and stream breaks", func() {
		origin := startOrigin().GRPC
		// The second sidecar has a TTL: its subscribers also hear of expiries.
		sidecars := []*sidecar{startSidecar(origin, "--watch-grace", "2s"), startSidecar(origin, "--watch-grace", "2s", "--ttl", "250ms")}
		Eventually(func() float64 {
			return sidecars[0].metric("lookahead_watch_connected") + sidecars[1].metric("lookahead_watch_connected")
		}).Should(Equal(2.0))

		zerolog.SetGlobalLevel(zerolog.WarnLevel)
		toxics := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
		var proxies []*toxiproxy.Proxy
		for i, s := range sidecars {
			p := toxiproxy.NewProxy(toxics, fmt.Sprintf("sidecar-%d", i), "127.0.0.1:0", s.GRPC)
			Expect(p.Start()).To(Succeed())
			DeferCleanup(p.Stop)
			proxies = append(proxies, p)
		}
		// Four applications, two on each sidecar, each reading and writing.
		var apps []*app
		for i := range 4 {
			c, err := lookahead.Dial(proxies[i%2].Listen, lookahead.WithNearCache(1<<20), lookahead.WithClientName(fmt.Sprintf("app-%d", i)),
				lookahead.WithGRPCOptions(grpc.WithTransportCredentials(insecure.NewCredentials()),
					// Reconnect within milliseconds of the proxy's return: gRPC's
					// default backoff (1 s and up) would leave the applications
					// disconnected most of the run.
					grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{
						BaseDelay: 5 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 50 * time.Millisecond},
						MinConnectTimeout: time.Second})))
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(c.Close)
			apps = append(apps, &app{index: i, c: c})
		}
		ids := []string{"task-1.1", "task-1.2", "task-1.3", "task-1.4", "task-1.5", "task-1.6"}

		var (
			mu       sync.Mutex
			history  []op
			nearHits atomic.Int64
			breaks   atomic.Int64
			failed   atomic.Int64
			lastErr  atomic.Value
			wg       sync.WaitGroup
		)
		var recorded atomic.Int64
		record := func(o op) { mu.Lock(); history = append(history, o); mu.Unlock(); recorded.Add(1) }
		// The run lasts its duration and until it has its operations (a
		// slow machine takes longer), within a hard limit.
		dur, minOps := nearRun()
		stop, limit := time.Now().Add(dur), time.Now().Add(dur+2*time.Minute)
		running := func() bool {
			now := time.Now()
			return now.Before(limit) && (now.Before(stop) || recorded.Load() < int64(minOps))
		}
		call := func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 2*time.Second)
		}
		for _, a := range apps {
			wg.Add(1)
			go func() { // the application's writer
				defer GinkgoRecover()
				defer wg.Done()
				for i := 0; running(); i++ {
					id := ids[(a.index+i)%len(ids)]
					ctx, cancel := call()
					start := time.Now()
					v, err := a.c.Put(ctx, &lookaheadv1.Object{Id: id, Type: "Task", Payload: fmt.Appendf(nil, "app%d-%d", a.index, i)})
					end := time.Now()
					cancel()
					if err == nil { // a write cut by a break was not acknowledged: no promise about it
						record(op{sidecar: a.index, id: id, write: true, version: v, start: start, end: end})
					}
					time.Sleep(time.Millisecond)
				}
			}()
			for r := range 2 {
				wg.Add(1)
				go func() { // two of its readers
					defer GinkgoRecover()
					defer wg.Done()
					for i := 0; running(); i++ {
						id := ids[(r+i)%len(ids)]
						ctx, cancel := call()
						start := time.Now()
						obj, st, err := a.c.Get(ctx, id, nil)
						end := time.Now()
						cancel()
						if err != nil {
							failed.Add(1) // the proxy was cut: an error, never an old version
							lastErr.Store(err.Error())
							time.Sleep(time.Millisecond)
							continue
						}
						if st.Near {
							nearHits.Add(1)
						}
						record(op{sidecar: a.index, id: id, version: obj.GetVersion(), start: start, end: end})
						time.Sleep(20 * time.Microsecond)
					}
				}()
			}
		}
		wg.Add(1)
		go func() { // the faults: one proxy cut at a time, every connection through it broken
			defer GinkgoRecover()
			defer wg.Done()
			for running() {
				time.Sleep(time.Duration(200+rand.IntN(200)) * time.Millisecond)
				// reset_peer with no timeout resets every connection at once,
				// and every new one while it stays.
				p := proxies[rand.IntN(len(proxies))]
				_, err := p.Toxics.AddToxicJson(strings.NewReader(`{"name": "cut", "type": "reset_peer", "stream": "downstream", "attributes": {"timeout": 0}}`))
				Expect(err).NotTo(HaveOccurred())
				breaks.Add(1)
				time.Sleep(time.Duration(10+rand.IntN(40)) * time.Millisecond)
				Expect(p.Toxics.RemoveToxic(context.Background(), "cut")).To(Succeed())
			}
		}()
		wg.Wait()

		writes := 0
		for _, o := range history {
			if o.write {
				writes++
			}
		}
		var flushes uint64
		for _, a := range apps {
			flushes += a.c.NearStats().Flushes
		}
		expired := sidecars[1].metric("lookahead_near_expired_total")
		summary := fmt.Sprintf("near-cache history: %d operations (%d writes, %d reads answered in-process), %d stream breaks, %d near-cache flushes, %.0f TTL expiries sent, %d failed reads (last: %v)",
			len(history), writes, nearHits.Load(), breaks.Load(), flushes, expired, failed.Load(), lastErr.Load())
		GinkgoWriter.Println(summary)
		AddReportEntry("near-cache history", summary)
		Expect(len(history)).To(BeNumerically(">=", minOps), "the history is long enough to mean something")
		Expect(writes).To(BeNumerically(">", 50))
		Expect(nearHits.Load()).To(BeNumerically(">", 0), "the near caches answered")
		Expect(breaks.Load()).To(BeNumerically(">=", 3))
		Expect(flushes).To(BeNumerically(">", 0), "breaks emptied near caches")
		Expect(expired).To(BeNumerically(">", 0), "the second sidecar's TTL expired copies its subscribers held")
		violations := checkHistory(history)
		Expect(violations).To(BeEmpty(), "%d violations, first: %v", len(violations), violations[:min(5, len(violations))])

		// Convergence: once writes stop, every application reads the last version.
		final := map[string]uint64{}
		for _, o := range history {
			if o.write && o.version > final[o.id] {
				final[o.id] = o.version
			}
		}
		for _, a := range apps {
			for id, v := range final {
				Eventually(func() uint64 {
					obj, _, err := a.c.Get(context.Background(), id, nil)
					if err != nil {
						return 0
					}
					return obj.GetVersion()
				}).Should(BeNumerically(">=", v), "app %d converges on %s", a.index, id)
			}
		}
	})
})
