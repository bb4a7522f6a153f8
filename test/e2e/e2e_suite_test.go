// Package e2e runs the real origin and sidecar binaries on loopback ports and
// checks what an application sees and what the sidecar's /metrics report.
package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/lookahead-dev/lookahead"
	"github.com/lookahead-dev/lookahead/internal/launch"
	"github.com/lookahead-dev/lookahead/internal/scrape"
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "lookahead end to end")
}

var bin string

var _ = BeforeSuite(func() {
	bin = GinkgoT().TempDir()
	Expect(launch.Build("../..", bin, "origin", "sidecar")).To(Succeed())
})

// startOrigin runs the reference origin seeded with task trees.
func startOrigin(args ...string) *launch.Process {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := launch.Start(ctx, filepath.Join(bin, "origin"), append([]string{
		"--listen", "127.0.0.1:0", "--metrics-listen", "", "--data", GinkgoT().TempDir(),
		"--seed", "tasks", "--task-roots", "4",
	}, args...), GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = p.Stop(10 * time.Second) })
	Expect(p.WaitServing(ctx)).To(Succeed())
	return p
}

// sidecar is a running sidecar with a client connected to it.
type sidecar struct {
	*launch.Process
	c *lookahead.Client
}

func startSidecar(originAddr string, args ...string) *sidecar {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := launch.Start(ctx, filepath.Join(bin, "sidecar"), append([]string{
		"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--origin", originAddr,
		"--health-interval", "50ms", "--drain-timeout", "5s",
	}, args...), GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = p.Stop(10 * time.Second) })
	Expect(p.WaitServing(ctx)).To(Succeed())
	c, err := lookahead.Dial(p.GRPC)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(c.Close)
	return &sidecar{Process: p, c: c}
}

func (s *sidecar) metric(name string, labels ...string) float64 {
	m, err := scrape.Fetch(context.Background(), s.MetricsURL())
	Expect(err).NotTo(HaveOccurred())
	return m.Sum(name, labels...)
}

func (s *sidecar) roundTrips() float64 { return s.metric("lookahead_origin_round_trips_total") }

// walk visits a tree object by object, one Get each, as db4o activation
// does, and returns the ids in visiting order.
func (s *sidecar) walk(root string) []string {
	var ids []string
	queue := []string{root}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		obj, _, err := s.c.Get(context.Background(), id, nil)
		Expect(err).NotTo(HaveOccurred(), "Get %s", id)
		ids = append(ids, obj.GetId())
		for _, r := range obj.GetRefs() {
			queue = append(queue, r.GetId())
		}
	}
	return ids
}

func init() {
	// A stuck process must not hang CI: bound each spec.
	if os.Getenv("CI") != "" {
		SetDefaultEventuallyTimeout(30 * time.Second)
	}
}
