package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// writeDataset writes n objects d-0..d-n-1 as NDJSON, each version 1 with
// refs to the next two and the payload "<tag> <i>": two tags of one length
// make two datasets alike in ids, versions, sizes and revisions.
func writeDataset(dir, tag string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id":"d-%d","version":1,"type":"T","refs":[{"field":"next","id":"d-%d"},{"field":"next","id":"d-%d"}],"payload_text":"%s %d"}`+"\n",
			i, (i+1)%n, (i+2)%n, tag, i)
	}
	path := filepath.Join(dir, tag+".ndjson")
	Expect(os.WriteFile(path, []byte(b.String()), 0o644)).To(Succeed())
	return path
}

var _ = Describe("an origin restarted on its address with another dataset of the same size", func() {
	It("is told apart by its dataset identity: the cache is flushed and no old object is served afterwards", func() {
		const n = 50
		dir := GinkgoT().TempDir()
		oldData, newData := writeDataset(dir, "old", n), writeDataset(dir, "new", n)
		o := startOrigin("--seed", "none", "--load", oldData)
		// A long grace: the cache stays trusted across the restart, so
		// only the identity can tell the datasets apart.
		s := startSidecar(o.GRPC, "--prefetch-mode", "off", "--watch-grace", "1h")
		Eventually(func() float64 { return s.metric("lookahead_watch_connected") }).Should(Equal(1.0))
		ctx := context.Background()
		payloads := func() map[string]int {
			tags := map[string]int{}
			for i := range n {
				obj, _, err := s.c.Get(ctx, fmt.Sprintf("d-%d", i), nil)
				Expect(err).NotTo(HaveOccurred())
				tags[strings.Fields(string(obj.GetPayload()))[0]]++
			}
			return tags
		}
		Expect(payloads()).To(Equal(map[string]int{"old": n}))
		Expect(payloads()).To(Equal(map[string]int{"old": n}), "now all cached")

		addr := o.GRPC
		Expect(o.Stop(10 * time.Second)).To(Succeed())
		startOrigin("--listen", addr, "--seed", "none", "--load", newData)

		Eventually(func() float64 { return s.metric("lookahead_origin_dataset_changes_total") }).Should(Equal(1.0))
		Expect(payloads()).To(Equal(map[string]int{"new": n}), "no object of the old dataset")
		Expect(s.Log()).To(ContainSubstring("origin serves another dataset"))
		Expect(s.Log()).NotTo(ContainSubstring("revision went backwards"), "same revisions: only the identity differs")
		Eventually(func() float64 { return s.metric("lookahead_watch_connected") }).Should(Equal(1.0))
		Expect(s.metric("lookahead_origin_dataset_changes_total")).To(Equal(1.0), "counted once")
	})
})
