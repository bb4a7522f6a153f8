package conformance

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/lookahead-dev/lookahead"
	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/launch"
)

var _ = Describe("the conformance checker", func() {
	DescribeTable("passes every check of a conforming origin, writes included",
		func(startOrigin func() *launch.Process, skipped []string) {
			o := startOrigin()
			out, code := check("--target", o.GRPC, "--writes")
			Expect(code).To(Equal(0), out)
			Expect(out).To(MatchRegexp(`\n\d+ passed, 0 failed, %d skipped\n$`, len(skipped)))
			for _, name := range skipped {
				Expect(out).To(MatchRegexp(`\n%s +SKIP `, name))
			}
			out, code = check("--target", o.GRPC)
			Expect(code).To(Equal(0), "read-only: %s", out)
			Expect(out).To(MatchRegexp(`writes/graph +SKIP +writes are off`))
		},
		Entry("the reference origin over bbolt", startBolt, nil),
		Entry("the Python example over SQLite", startPython, []string{"health/serving-or-absent"}),
	)

	It("fails, exit status 1, against what is not a conforming origin", func() {
		s := start(filepath.Join(bin, "sidecar"), "--listen", "127.0.0.1:0", "--metrics-listen", "",
			"--origin", startBolt().GRPC) // a sidecar does not serve OriginService
		out, code := check("--target", s.GRPC, "--timeout", "2s")
		Expect(code).To(Equal(1), out)
		Expect(out).To(MatchRegexp(`batchget/empty +FAIL +.*Unimplemented`))
	})

	It("refuses bad flags with exit status 2", func() {
		out, code := check("--writes")
		Expect(code).To(Equal(2))
		Expect(out).To(ContainSubstring("--target is empty"))
	})
})

var _ = Describe("a sidecar in front of an origin without grpc.health.v1", func() {
	It("serves, probing with a round trip, and says why once", func() {
		o := startPython()
		s := start(filepath.Join(bin, "sidecar"), "--listen", "127.0.0.1:0", "--metrics-listen", "",
			"--origin", o.GRPC, "--health-interval", "50ms")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		Expect(s.WaitServing(ctx)).To(Succeed(), "SERVING without the origin's health service")
		c, err := lookahead.Dial(s.GRPC)
		Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		v, err := c.Put(ctx, &lookaheadv1.Object{Id: "py/1", Type: "Note", Payload: []byte("hello")})
		Expect(err).NotTo(HaveOccurred())
		obj, _, err := c.Get(ctx, "py/1", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(obj.GetVersion()).To(Equal(v))
		Expect(string(obj.GetPayload())).To(Equal("hello"))
		Eventually(func() int { return strings.Count(s.Log(), `"level":"INFO","msg":"origin dataset"`) }).Should(Equal(1))
		time.Sleep(200 * time.Millisecond) // several more probes
		Expect(strings.Count(s.Log(), "does not implement grpc.health.v1")).To(Equal(1), "logged once: %s", s.Log())
	})
})
