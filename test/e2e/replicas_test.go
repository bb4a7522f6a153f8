package e2e

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/lookahead-dev/lookahead/internal/launch"
	"github.com/lookahead-dev/lookahead/internal/scrape"
)

// served is how many BatchGets an origin answered, from its /metrics.
func served(p *launch.Process) float64 {
	m, err := scrape.Fetch(context.Background(), p.MetricsURL())
	Expect(err).NotTo(HaveOccurred())
	return m.Sum("lookahead_origin_requests_total", "rpc", "BatchGet")
}

func copyFile(from, to string) {
	in, err := os.Open(from)
	Expect(err).NotTo(HaveOccurred())
	defer in.Close()
	out, err := os.Create(to)
	Expect(err).NotTo(HaveOccurred())
	_, err = io.Copy(out, in)
	Expect(err).NotTo(HaveOccurred())
	Expect(out.Close()).To(Succeed())
}

var _ = Describe("two replicas of an origin behind one target", func() {
	It("lose one mid-run, killed, and no read fails", func() {
		// Two replicas of one dataset: the second a copy of the first's
		// store, so they share its identity.
		dirA, dirB := GinkgoT().TempDir(), GinkgoT().TempDir()
		seeded := startOrigin("--data", dirA)
		Expect(seeded.Stop(10 * time.Second)).To(Succeed())
		copyFile(filepath.Join(dirA, "origin.db"), filepath.Join(dirB, "origin.db"))
		a := startOrigin("--data", dirA, "--metrics-listen", "127.0.0.1:0")
		b := startOrigin("--data", dirB, "--metrics-listen", "127.0.0.1:0")
		s := startSidecar("static:///"+a.GRPC+","+b.GRPC, "--prefetch-mode", "off")

		var ids []string
		for root := range 4 {
			ids = append(ids, treeIDs(root)...)
		}
		ctx := context.Background()
		for _, id := range ids[:40] {
			_, _, err := s.c.Get(ctx, id, nil)
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(served(a)).To(BeNumerically(">", 0), "round robin: both replicas serve")
		Expect(served(b)).To(BeNumerically(">", 0))
		beforeB := served(b)

		const readers = 8
		rest := ids[40:]
		var failed atomic.Int64
		var kill sync.Once
		var wg sync.WaitGroup
		for r := range readers {
			wg.Go(func() {
				defer GinkgoRecover()
				for i := r; i < len(rest); i += readers {
					if i > len(rest)/4 {
						kill.Do(a.Kill) // SIGKILL, while the others read on
					}
					if _, _, err := s.c.Get(ctx, rest[i], nil); err != nil {
						failed.Add(1)
						GinkgoWriter.Printf("Get %s: %v\n", rest[i], err)
					}
				}
			})
		}
		wg.Wait()
		Expect(a.Exited()).To(BeTrue())
		Expect(failed.Load()).To(BeZero(), "no read failed")
		Expect(served(b)).To(BeNumerically(">", beforeB), "the survivor served the rest")
		Expect(s.metric("lookahead_origin_dataset_changes_total")).To(BeZero(), "one dataset, one identity")
	})
})
