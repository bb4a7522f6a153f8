package faults

import (
	"context"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/launch"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

var _ = Describe("a hostile origin (internal/origintest)", func() {
	health := func(s *sidecar, service string) healthpb.HealthCheckResponse_ServingStatus {
		cc, err := grpc.NewClient(s.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
		Expect(err).NotTo(HaveOccurred())
		defer cc.Close()
		resp, err := healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{Service: service})
		Expect(err).NotTo(HaveOccurred())
		return resp.GetStatus()
	}

	It("health SERVING while every BatchGet fails: the sidecar is not ready, liveness stays SERVING, ready again once reads work", func() {
		o := origintest.New(&graph.Object{ID: "a", Version: 1}, &graph.Object{ID: "b", Version: 1})
		s := startSidecar(o.StartTCP(GinkgoT()), "--prefetch-mode", "off", "--origin-breaker-failures", "0")
		o.Misbehave(origintest.Misbehaviour{BatchGetErr: status.Error(codes.Unavailable, "shard down")})
		_, err := s.get(5*time.Second, "a")
		Expect(code(err)).To(Equal(codes.Unavailable), "%v", err)
		Eventually(func() healthpb.HealthCheckResponse_ServingStatus { return health(s, "") }).
			WithTimeout(5 * time.Second).Should(Equal(healthpb.HealthCheckResponse_NOT_SERVING))
		Expect(health(s, "liveness")).To(Equal(healthpb.HealthCheckResponse_SERVING))

		o.Misbehave(origintest.Misbehaviour{})
		Eventually(func() healthpb.HealthCheckResponse_ServingStatus { return health(s, "") }).
			WithTimeout(5*time.Second).Should(Equal(healthpb.HealthCheckResponse_SERVING), "back without traffic: the sidecar probes")
		_, err = s.get(5*time.Second, "b")
		Expect(err).NotTo(HaveOccurred())
		record("origin health SERVING, every BatchGet UNAVAILABLE: readiness NOT_SERVING, liveness SERVING; SERVING again once reads work, without traffic")
	})

	It("an id left out of a reply is UNAVAILABLE naming the origin's fault, never NOT_FOUND, never remembered", func() {
		o := origintest.New(&graph.Object{ID: "a", Version: 1})
		s := startSidecar(o.StartTCP(GinkgoT()), "--prefetch-mode", "off")
		o.Misbehave(origintest.Misbehaviour{Omit: []string{"a"}})
		_, err := s.get(5*time.Second, "a")
		Expect(code(err)).To(Equal(codes.Unavailable), "%v", err)
		Expect(err.Error()).To(ContainSubstring("origin reply incomplete"))
		o.Misbehave(origintest.Misbehaviour{})
		got, err := s.get(5*time.Second, "a")
		Expect(err).NotTo(HaveOccurred())
		Expect(got.GetId()).To(Equal("a"))
		record("BatchGet reply without an asked id: UNAVAILABLE \"origin reply incomplete\"; the id is served once the origin answers it")
	})

	It("--unix-socket on a regular file: the sidecar refuses to start and the file stays", func() {
		path := filepath.Join(GinkgoT().TempDir(), "app.sock")
		Expect(os.WriteFile(path, []byte("precious"), 0o600)).To(Succeed())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		p, err := launch.Start(ctx, filepath.Join(bin, "sidecar"), append(append([]string{}, sidecarDefaults...),
			"--origin", "127.0.0.1:1", "--unix-socket", path), GinkgoWriter)
		if p != nil {
			_ = p.Stop(5 * time.Second)
		}
		Expect(err).To(MatchError(ContainSubstring("exists and is not a socket")))
		b, err := os.ReadFile(path)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(b)).To(Equal("precious"))
		record("--unix-socket on a regular file: exit at start naming it, the file untouched")
	})
})
