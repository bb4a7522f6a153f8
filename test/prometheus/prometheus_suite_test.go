// Package prometheus_test runs the real origin and sidecar with a real
// Prometheus server scraping the sidecar, and checks what an operator would
// see: the hit ratio and round-trip rate through Prometheus' query API,
// lookahead's rules loaded and evaluating, and the Grafana dashboard's
// queries answering.
package prometheus_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/lookahead-dev/lookahead/internal/launch"
)

func TestPrometheus(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "lookahead with a real Prometheus")
}

const (
	moduleDir     = "../.."
	rulesFile     = "../../deploy/prometheus/lookahead.rules.yml"
	dashboardFile = "../../deploy/grafana/lookahead.json"
	scrapeJob     = "lookahead-sidecar"
)

var (
	origin, sidecar *launch.Process
	prom            *promServer
)

var _ = BeforeSuite(func() {
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") == "true" {
			Fail("the prometheus binary is not on PATH; CI must install Debian's prometheus package")
		}
		Skip("the prometheus binary is not on PATH (apt-get install prometheus): suite skipped")
	}
	// Everything here waits on processes: bound it, and every Eventually.
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	bin := GinkgoT().TempDir()
	Expect(launch.Build(moduleDir, bin, "origin", "sidecar")).To(Succeed())

	origin, err = launch.Start(ctx, filepath.Join(bin, "origin"), []string{
		"--listen", "127.0.0.1:0", "--metrics-listen", "", "--data", GinkgoT().TempDir(),
		"--seed", "tasks", "--task-roots", "4", "--latency", "1ms",
	}, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	Expect(origin.WaitServing(ctx)).To(Succeed())

	sidecar, err = launch.Start(ctx, filepath.Join(bin, "sidecar"), []string{
		"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--origin", origin.GRPC,
		"--prefetch-depth", "4", "--health-interval", "100ms", "--drain-timeout", "5s",
	}, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	Expect(sidecar.WaitServing(ctx)).To(Succeed())

	rules, err := filepath.Abs(rulesFile)
	Expect(err).NotTo(HaveOccurred())
	prom, err = startPrometheus(ctx, promBin, GinkgoT().TempDir(), scrapeJob, sidecar.Metrics, rules)
	Expect(err).NotTo(HaveOccurred())
})

// AfterSuite runs after a failed or skipped BeforeSuite too: stop whatever
// started, newest first.
var _ = AfterSuite(func() {
	if prom != nil {
		Expect(prom.Stop(10 * time.Second)).To(Succeed())
	}
	if sidecar != nil {
		Expect(sidecar.Stop(10 * time.Second)).To(Succeed())
	}
	if origin != nil {
		Expect(origin.Stop(10 * time.Second)).To(Succeed())
	}
})
