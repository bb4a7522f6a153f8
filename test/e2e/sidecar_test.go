package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/lookahead-dev/lookahead"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// treeIDs is a task tree's ids in breadth-first order.
func treeIDs(root int) []string {
	var ids []string
	g := graph.TaskTrees{Roots: root + 1, Fanout: 5, Levels: 5}
	_ = g.Generate(func(o *graph.Object) error {
		if o.ID == g.RootID(root) || strings.HasPrefix(o.ID, g.RootID(root)+".") {
			ids = append(ids, o.ID)
		}
		return nil
	})
	return ids
}

func code(err error) codes.Code { return status.Code(err) }

var _ = Describe("the sidecar in front of a real origin", func() {
	var origin string
	BeforeEach(func() { origin = startOrigin().GRPC })

	It("walks a graph exactly and serves the second walk with zero origin round trips", func() {
		s := startSidecar(origin, "--prefetch-mode", "off")
		Expect(s.walk("task-1")).To(Equal(treeIDs(1)))
		Expect(s.roundTrips()).To(BeNumerically("==", 781))
		Expect(s.walk("task-1")).To(Equal(treeIDs(1)))
		Expect(s.roundTrips()).To(BeNumerically("==", 781), "second walk: no round trips")
		Expect(s.metric("lookahead_cache_hits_total")).To(BeNumerically(">=", 781))
	})

	It("streams a GetGraph in breadth-first order", func() {
		s := startSidecar(origin)
		var ids []string
		missing, err := s.c.GetGraph(context.Background(), lookahead.Graph{Roots: []string{"task-2", "absent"}, Depth: lookahead.Uint32(4)},
			func(r lookahead.Result) error { ids = append(ids, r.Object.GetId()); return nil })
		Expect(err).NotTo(HaveOccurred())
		Expect(ids).To(Equal(treeIDs(2)))
		Expect(missing).To(Equal([]string{"absent"}))
	})

	It("answers bad input with INVALID_ARGUMENT naming the problem, and a missing object with NOT_FOUND", func() {
		s := startSidecar(origin)
		ctx := context.Background()
		_, _, err := s.c.Get(ctx, "", nil)
		Expect(code(err)).To(Equal(codes.InvalidArgument))
		Expect(err.Error()).To(ContainSubstring("empty id"))
		_, _, err = s.c.Get(ctx, strings.Repeat("i", 1025), nil)
		Expect(code(err)).To(Equal(codes.InvalidArgument))
		Expect(err.Error()).To(ContainSubstring("1025 bytes exceeds the limit of 1024"))
		_, _, err = s.c.BatchGet(ctx, make([]string, 1001), nil)
		Expect(code(err)).To(Equal(codes.InvalidArgument))
		Expect(err.Error()).To(ContainSubstring("1001 ids exceed the limit of 1000"))
		_, _, err = s.c.Get(ctx, "task-0", &lookahead.Prefetch{Depth: lookahead.Uint32(17)})
		Expect(code(err)).To(Equal(codes.InvalidArgument))
		Expect(err.Error()).To(ContainSubstring("depth 17 exceeds the limit of 16"))
		_, err = s.c.GetGraph(ctx, lookahead.Graph{Roots: []string{"task-0"}, MaxObjects: lookahead.Uint32(100001)},
			func(lookahead.Result) error { return nil })
		Expect(code(err)).To(Equal(codes.InvalidArgument))
		Expect(err.Error()).To(ContainSubstring("max_objects 100001 exceeds the limit of 100000"))
		_, _, err = s.c.Get(ctx, "no-such-task", nil)
		Expect(code(err)).To(Equal(codes.NotFound))
	})

	It("keeps serving what it has when the origin stops, and says UNAVAILABLE for the rest", func() {
		o := startOrigin()
		s := startSidecar(o.GRPC, "--prefetch-mode", "off")
		s.walk("task-0.1")
		Expect(o.Stop(10 * time.Second)).To(Succeed())
		Eventually(func() error {
			_, _, err := s.c.Get(context.Background(), "task-0.2", nil)
			return err
		}).Should(MatchError(ContainSubstring("origin unavailable")))
		_, _, err := s.c.Get(context.Background(), "task-0.3", nil)
		Expect(code(err)).To(Equal(codes.Unavailable))
		Expect(s.walk("task-0.1")).To(HaveLen(156), "cached subtree still served")

		cc, err := grpc.NewClient(s.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
		Expect(err).NotTo(HaveOccurred())
		defer cc.Close()
		hc := healthpb.NewHealthClient(cc)
		Eventually(func() healthpb.HealthCheckResponse_ServingStatus {
			r, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{})
			Expect(err).NotTo(HaveOccurred())
			return r.GetStatus()
		}).Should(Equal(healthpb.HealthCheckResponse_NOT_SERVING), "readiness follows the origin")
		r, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{Service: "liveness"})
		Expect(err).NotTo(HaveOccurred())
		Expect(r.GetStatus()).To(Equal(healthpb.HealthCheckResponse_SERVING), "liveness does not")
	})

	It("restarts cleanly", func() {
		s := startSidecar(origin)
		s.walk("task-3.1")
		Expect(s.Stop(10*time.Second)).To(Succeed(), "graceful exit code 0")
		Expect(s.Log()).To(ContainSubstring("shutting down"))
		again := startSidecar(origin)
		Expect(again.walk("task-3.1")).To(HaveLen(156))
	})
})

var _ = Describe("concurrent misses", func() {
	It("coalesce 100 concurrent Gets of one uncached id into one origin fetch", func() {
		origin := startOrigin("--latency", "200ms").GRPC
		s := startSidecar(origin, "--prefetch-mode", "off")
		var wg sync.WaitGroup
		errs := make(chan error, 100)
		for i := 0; i < 100; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, err := s.c.Get(context.Background(), "task-2.3", nil)
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(s.metric("lookahead_origin_round_trips_total", "rpc", "BatchGet")).To(BeNumerically("==", 1))
		Expect(s.metric("lookahead_inflight_joins_total") + s.metric("lookahead_cache_hits_total")).To(BeNumerically("==", 99))
	})
})

var _ = Describe("prefetching a db4o task tree", func() {
	var origin string
	BeforeEach(func() { origin = startOrigin().GRPC })

	DescribeTable("origin round trips per cold walk of 781 objects",
		func(args []string, atMost float64) {
			s := startSidecar(origin, args...)
			// Let the prefetch of the root's subtree land before walking on,
			// as an application's processing time would.
			_, _, err := s.c.Get(context.Background(), "task-0", nil)
			Expect(err).NotTo(HaveOccurred())
			Eventually(func() float64 { return s.metric("lookahead_prefetch_issued_total") }).
				Should(BeNumerically(">=", 780*boolf(atMost < 781)))
			Expect(s.walk("task-0")).To(Equal(treeIDs(0)))
			rt := s.roundTrips()
			AddReportEntry(fmt.Sprintf("round trips %v", args), rt)
			GinkgoWriter.Printf("%v: %v origin round trips\n", args, rt)
			Expect(rt).To(BeNumerically("<=", atMost))
			if atMost < 781 {
				Expect(s.metric("lookahead_prefetch_used_total")).To(BeNumerically("==", 780))
			}
		},
		Entry("prefetch off: one per object", []string{"--prefetch-mode", "off"}, 781.0),
		Entry("static, level-batched BatchGet: one per level", []string{"--prefetch-depth", "4", "--no-expand", "--batch-size", "1000"}, 5.0),
		Entry("static, 256-id batches: level 4 (625 ids) takes 3 parallel calls", []string{"--prefetch-depth", "4", "--no-expand"}, 7.0),
		Entry("static with Expand: the root plus one expansion", []string{"--prefetch-depth", "4"}, 2.0),
	)

	It("walks on while the Expand is in flight: every Get waits for it rather than fetching", func() {
		// Each reply, and each stream's first message, waits a second: long
		// enough that the walk reaches the Expand before it answers even on
		// a loaded machine (at 200 ms, one CI run saw the walk arrive late).
		slow := startOrigin("--latency", "1s").GRPC
		s := startSidecar(slow, "--prefetch-depth", "4")
		_, _, err := s.c.Get(context.Background(), "task-0", nil)
		Expect(err).NotTo(HaveOccurred())
		// A worker claims the root's children for its Expand before the
		// round trip starts; a Get that beat the worker to them would rightly
		// fetch on its own (demands never wait for speculation to start).
		Eventually(func() float64 { return s.metric("lookahead_origin_in_flight", "rpc", "Expand") }).Should(Equal(1.0))
		Expect(s.walk("task-0")).To(Equal(treeIDs(0)))
		Expect(s.metric("lookahead_origin_round_trips_total", "rpc", "BatchGet")).To(BeNumerically("==", 1), "the root")
		Expect(s.metric("lookahead_origin_round_trips_total", "rpc", "Expand")).To(BeNumerically("==", 1))
		Expect(s.metric("lookahead_prefetch_late_total")).To(BeNumerically(">=", 1), "the walk reached the Expand before its reply")
		Expect(s.metric("lookahead_prefetch_used_total")).To(BeNumerically("==", 780))
	})
})

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
