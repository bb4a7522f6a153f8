package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

// floodClients is how many callers keep the sidecar busy with misses.
const floodClients = 10000

// BenchmarkHitDuringFlood measures Gets of a cached object, one at a time
// on their own connection, while floodClients callers each ask again and
// again for ids never asked before from an origin that takes 50 ms per
// reply: a hit must not queue behind the misses. In "gets+walks" one in
// ten flooding callers opens GetGraphs instead (walks of depth 3 below
// uncached roots, refused beyond --max-walks); "none" is the same hits
// without a flood, the floor of this machine; in "gets-apart" the
// flooding callers run in another process (this test binary again), over
// TCP, as applications would, and in "gets-apart-40conns" that process
// spreads them over 40 connections. It reports the hit's p50 and p99. Run it
// with a fixed count, e.g. -benchtime 2000x: the flood is set up once per
// run.
//
// The hits have a client connection of their own and the flood another
// (one connection shared by all its callers, but for gets-apart-40conns),
// as two applications would;
// each kind runs with the servers' per-connection stream limit at
// streams=N (grpc.MaxConcurrentStreams, --max-concurrent-streams), where
// the flood's streams beyond N wait in its own client, and at
// streams=unlimited, gRPC's default; and with the sidecar-wide admission
// of requests that need the origin at its default (origin-requests=default,
// --max-origin-requests and --max-origin-waiting), where the flood's
// misses beyond it wait parked in the sidecar or are refused, and without
// it (origin-requests=unlimited). A flooding caller refused
// RESOURCE_EXHAUSTED asks again after floodBackoff. The hits' client runs
// in the sidecar's process, over an in-memory connection, so its own
// goroutines wait for a core behind the flood's handlers too; in the
// *-hits-apart kinds it runs in another process (this binary again),
// over TCP, as an application would.
func BenchmarkHitDuringFlood(b *testing.B) {
	for _, fl := range []floodKind{
		{name: "none"}, {name: "gets", getters: floodClients},
		{name: "gets+walks", getters: floodClients * 9 / 10, walkers: floodClients / 10},
		{name: "gets-apart", getters: floodClients, conns: 1},
		{name: "gets-apart-40conns", getters: floodClients, conns: 40},
		{name: "none-hits-apart", hitsApart: true},
		{name: "gets-apart-40conns-hits-apart", getters: floodClients, conns: 40, hitsApart: true},
	} {
		for _, streams := range floodStreamLimits {
			for _, misses := range []int{unlimited, 0} {
				name := fmt.Sprintf("flood=%s/streams=%s/origin-requests=%s", fl.name, streamLimitName(streams), originLimitName(misses))
				b.Run(name, func(b *testing.B) {
					benchmarkHitDuringFlood(b, fl, streams, Config{MaxOriginRequests: misses})
				})
			}
		}
	}
}

// floodKind is one flood of BenchmarkHitDuringFlood.
type floodKind struct {
	name             string
	getters, walkers int
	conns            int  // of a flood from another process; 0 = in this one
	hitsApart        bool // the hits come from another process, over TCP
}

// floodStreamLimits are the per-connection stream limits
// BenchmarkHitDuringFlood compares; 0 is none.
var floodStreamLimits = []uint32{0, 256}

// unlimited, as Config.MaxOriginRequests, is more places than callers.
const unlimited = 1 << 30

func streamLimitName(n uint32) string {
	if n == 0 {
		return "unlimited"
	}
	return strconv.FormatUint(uint64(n), 10)
}

func originLimitName(n int) string {
	if n == unlimited {
		return "unlimited"
	}
	return "default"
}

// benchmarkHitDuringFlood is one row of BenchmarkHitDuringFlood.
func benchmarkHitDuringFlood(b *testing.B, fl floodKind, streams uint32, cfg Config) {
	o := origintest.New(&graph.Object{ID: "hit", Version: 1, Payload: make([]byte, 1024)})
	o.Misbehave(origintest.Misbehaviour{Delay: 50 * time.Millisecond, Generate: origintest.Endless(2)})
	limit := grpc.MaxConcurrentStreams(streams)
	r := newHostileRigWith(b, o, origin.Config{}, cfg, limit)
	hits := lookaheadv1.NewSidecarServiceClient(r.dial())
	ctx := context.Background()
	if _, err := hits.Get(ctx, &lookaheadv1.GetRequest{Id: "hit"}); err != nil {
		b.Fatal(err)
	}
	var addr string
	if fl.conns > 0 || fl.hitsApart {
		var stopTCP func()
		addr, stopTCP = serveTCP(b, r, limit)
		defer stopTCP()
	}
	var stop func()
	if fl.conns > 0 {
		stop = floodApart(b, r, addr, fl.getters, fl.conns)
	} else {
		stop = flood([]lookaheadv1.SidecarServiceClient{r.client}, fl.getters, fl.walkers)
	}
	defer stop()
	missed := testutil.ToFloat64(r.m.Misses)
	sched := schedLatencies()
	b.ResetTimer()
	var lat []time.Duration
	if fl.hitsApart {
		lat = hitsApart(b, addr, b.N)
	} else {
		lat = hitsHere(b, hits, b.N)
	}
	b.StopTimer()
	b.ReportMetric(sched.p99since()*1e6, "sched-p99-µs")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric((testutil.ToFloat64(r.m.Misses)-missed)/b.Elapsed().Seconds(), "misses/s")
}

// hitsHere Gets the cached object n times, one at a time, on c, and
// returns each one's latency.
func hitsHere(b *testing.B, c lookaheadv1.SidecarServiceClient, n int) []time.Duration {
	lat := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		resp, err := c.Get(context.Background(), &lookaheadv1.GetRequest{Id: "hit"})
		if err != nil || resp.GetStatus() != lookaheadv1.CacheStatus_CACHE_STATUS_HIT {
			b.Fatalf("not a main-tier hit: %v, %v", resp.GetStatus(), err)
		}
		lat = append(lat, time.Since(start))
	}
	return lat
}

// schedSample is the runtime's histogram of the time goroutines spent
// runnable before they ran: why a hit that takes no lock can still wait.
type schedSample []metrics.Sample

func schedLatencies() schedSample {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(s)
	return s
}

// p99since is the 99th percentile, in seconds, of the latencies since s
// was read (the upper bound of its bucket).
func (s schedSample) p99since() float64 {
	now := schedLatencies()
	before, after := s[0].Value.Float64Histogram(), now[0].Value.Float64Histogram()
	var total uint64
	delta := make([]uint64, len(after.Counts))
	for i := range delta {
		delta[i] = after.Counts[i] - before.Counts[i]
		total += delta[i]
	}
	var seen uint64
	for i, n := range delta {
		if seen += n; seen*100 >= total*99 {
			return after.Buckets[i+1]
		}
	}
	return 0
}

// floodBackoff is how long a flooding caller refused RESOURCE_EXHAUSTED
// waits before it asks again, as a client told to retry later would: the
// origin's delay, the time a place takes to free up. Without it the
// refused callers ask again at once, as fast as the cores let them, and
// the benchmark measures that loop's CPU (in gets, in its own process).
const floodBackoff = 50 * time.Millisecond

// flood starts getters callers that Get a new id each time and walkers
// that open GetGraphs of new roots, until stop, which waits for them; the
// callers take turns over the clients cs.
func flood(cs []lookaheadv1.SidecarServiceClient, getters, walkers int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var next atomic.Int64
	for i := range getters + walkers {
		c := cs[i%len(cs)]
		wg.Go(func() {
			for ctx.Err() == nil {
				id := fmt.Sprintf("flood-%d", next.Add(1))
				var err error
				if i < walkers {
					var s lookaheadv1.SidecarService_GetGraphClient
					if s, err = c.GetGraph(ctx, &lookaheadv1.GetGraphRequest{Roots: []string{id}, Depth: u32(3)}); err == nil {
						_, err = drain(s)
					}
				} else {
					_, err = c.Get(ctx, &lookaheadv1.GetRequest{Id: id})
				}
				if status.Code(err) == codes.ResourceExhausted { // "retry later"
					select {
					case <-time.After(floodBackoff):
					case <-ctx.Done():
					}
				}
			}
		})
	}
	if getters+walkers > 0 {
		time.Sleep(time.Second) // the flood under way
	}
	return func() { cancel(); wg.Wait() }
}

// floodEnv, set to "address,callers,connections", makes this test binary a flooding
// client of the sidecar at address instead of running tests: see
// floodApart.
const floodEnv = "LOOKAHEAD_FLOOD"

// serveTCP serves r's sidecar on a TCP listener too, with opts, until stop.
func serveTCP(b *testing.B, r *hostileRig, opts ...grpc.ServerOption) (addr string, stop func()) {
	b.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	gs := grpc.NewServer(opts...)
	lookaheadv1.RegisterSidecarServiceServer(gs, r.svc)
	go func() { _ = gs.Serve(lis) }()
	return lis.Addr().String(), gs.Stop
}

// floodApart floods r's sidecar at addr with getters callers over conns
// connections from another process (this binary under floodEnv), until
// stop.
func floodApart(b *testing.B, r *hostileRig, addr string, getters, conns int) (stop func()) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d,%d", floodEnv, addr, getters, conns))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	require.NoError(b, err)
	require.NoError(b, cmd.Start())
	missed := testutil.ToFloat64(r.m.Misses)
	require.Eventually(b, func() bool { return testutil.ToFloat64(r.m.Misses) > missed+1000 },
		time.Minute, 10*time.Millisecond, "the flood under way")
	time.Sleep(time.Second) // all its callers started, as in flood
	return func() {
		_ = in.Close()
		assert.NoError(b, cmd.Wait())
	}
}

// floodFrom is the flooding process: spec is floodEnv's value; it floods
// until its standard input closes, and returns the exit status.
func floodFrom(spec string) int {
	var addr string
	var getters, conns int
	if _, err := fmt.Sscanf(strings.ReplaceAll(spec, ",", " "), "%s %d %d", &addr, &getters, &conns); err != nil || conns < 1 {
		fmt.Fprintf(os.Stderr, "%s=%q: want address,callers,connections (%v)\n", floodEnv, spec, err)
		return 2
	}
	cs := make([]lookaheadv1.SidecarServiceClient, conns)
	for i := range cs {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer cc.Close()
		cs[i] = lookaheadv1.NewSidecarServiceClient(cc)
	}
	stop := flood(cs, getters, 0)
	_, _ = io.Copy(io.Discard, os.Stdin)
	stop()
	return 0
}

// hitsEnv, set to "address,count", makes this test binary the hits' client
// of the sidecar at address instead of running tests: see hitsApart.
const hitsEnv = "LOOKAHEAD_HITS"

// hitsApart Gets the cached object n times, one at a time, from another
// process (this binary under hitsEnv) over TCP to addr, and returns each
// one's latency as that process measured it.
func hitsApart(b *testing.B, addr string, n int) []time.Duration {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d", hitsEnv, addr, n))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(b, err)
	lat := make([]time.Duration, 0, n)
	for _, f := range strings.Fields(string(out)) {
		ns, err := strconv.ParseInt(f, 10, 64)
		require.NoError(b, err)
		lat = append(lat, time.Duration(ns))
	}
	require.Len(b, lat, n)
	return lat
}

// hitsFrom is the hits' process: spec is hitsEnv's value; it writes each
// hit's latency in nanoseconds to its standard output, one a line, and
// returns the exit status.
func hitsFrom(spec string) int {
	addr, count, _ := strings.Cut(spec, ",")
	n, err := strconv.Atoi(count)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s=%q: want address,count (%v)\n", hitsEnv, spec, err)
		return 2
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cc.Close()
	c := lookaheadv1.NewSidecarServiceClient(cc)
	ctx := context.Background()
	if _, err := c.Get(ctx, &lookaheadv1.GetRequest{Id: "hit"}); err != nil { // connected
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for range n {
		start := time.Now()
		resp, err := c.Get(ctx, &lookaheadv1.GetRequest{Id: "hit"})
		if err != nil || resp.GetStatus() != lookaheadv1.CacheStatus_CACHE_STATUS_HIT {
			fmt.Fprintf(os.Stderr, "not a main-tier hit: %v, %v\n", resp.GetStatus(), err)
			return 1
		}
		fmt.Fprintln(w, time.Since(start).Nanoseconds())
	}
	return 0
}
