package faults

import (
	"context"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"

	"github.com/lookahead-dev/lookahead"
	"github.com/lookahead-dev/lookahead/internal/launch"
	"github.com/lookahead-dev/lookahead/internal/tlsconfig"
	"github.com/lookahead-dev/lookahead/internal/tlsconfig/tlsconfigtest"
)

var _ = Describe("TLS end to end", func() {
	var (
		ca, other                                     *tlsconfigtest.CA
		originCert, sidecarCert, sidecarAsClient, app tlsconfigtest.Pair
	)
	BeforeEach(func() {
		dir := GinkgoT().TempDir()
		var err error
		ca, err = tlsconfigtest.NewCA(dir, "ca")
		Expect(err).NotTo(HaveOccurred())
		other, err = tlsconfigtest.NewCA(dir, "other")
		Expect(err).NotTo(HaveOccurred())
		for _, c := range []struct {
			pair  *tlsconfigtest.Pair
			name  string
			hosts []string
		}{
			{&originCert, "origin", []string{"127.0.0.1"}},
			{&sidecarCert, "sidecar", []string{"127.0.0.1"}},
			{&sidecarAsClient, "sidecar-client", nil},
			{&app, "app", nil},
		} {
			*c.pair, err = ca.Issue(c.name, c.hosts...)
			Expect(err).NotTo(HaveOccurred())
		}
	})

	start := func(bin string, args ...string) *launch.Process {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		p, err := launch.Start(ctx, bin, args, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = p.Stop(10 * time.Second) })
		return p
	}
	startTLSOrigin := func() *launch.Process {
		return start(filepath.Join(bin, "origin"), "--listen", "127.0.0.1:0", "--metrics-listen", "",
			"--data", GinkgoT().TempDir(), "--seed", "tasks", "--task-roots", "4",
			"--tls-cert", originCert.CertFile, "--tls-key", originCert.KeyFile, "--tls-client-ca", ca.CertFile)
	}
	startTLSSidecar := func(origin string, args ...string) *launch.Process {
		return start(filepath.Join(bin, "sidecar"), append(append(append([]string{}, sidecarDefaults...), "--origin", origin,
			"--tls-cert", sidecarCert.CertFile, "--tls-key", sidecarCert.KeyFile, "--tls-client-ca", ca.CertFile), args...)...)
	}
	dial := func(addr string, files tlsconfig.Client) *lookahead.Client {
		cfg, err := files.Load()
		Expect(err).NotTo(HaveOccurred())
		c, err := lookahead.Dial(addr, lookahead.WithGRPCOptions(grpc.WithTransportCredentials(credentials.NewTLS(cfg))))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(c.Close)
		return c
	}
	appFiles := func() tlsconfig.Client {
		return tlsconfig.Client{CAFile: ca.CertFile, CertFile: app.CertFile, KeyFile: app.KeyFile}
	}

	It("serves over mTLS from an origin reached over mTLS, and refuses clients without the right certificate", func() {
		o := startTLSOrigin()
		s := startTLSSidecar(o.GRPC, "--origin-tls-ca", ca.CertFile,
			"--origin-tls-cert", sidecarAsClient.CertFile, "--origin-tls-key", sidecarAsClient.KeyFile)
		c := dial(s.GRPC, appFiles())
		Eventually(func() error { _, _, err := c.Get(context.Background(), "task-0.7", nil); return err }).
			WithTimeout(10*time.Second).Should(Succeed(), "the sidecar reaches its mTLS origin")
		sc := &sidecar{Process: s, c: c}
		ids, err := sc.graphOf(10*time.Second, "task-3", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(ids).To(Equal(treeIDs("task-3")))

		noCert := dial(s.GRPC, tlsconfig.Client{CAFile: ca.CertFile})
		_, _, err = noCert.Get(context.Background(), "task-0.7", nil)
		Expect(code(err)).To(Equal(codes.Unavailable), "no client certificate: %v", err)

		wrongCA := dial(s.GRPC, tlsconfig.Client{CAFile: other.CertFile, CertFile: app.CertFile, KeyFile: app.KeyFile})
		_, _, err = wrongCA.Get(context.Background(), "task-0.7", nil)
		Expect(code(err)).To(Equal(codes.Unavailable), "server certificate from an untrusted CA: %v", err)
		Expect(err.Error()).To(ContainSubstring("certificate signed by unknown authority"))

		plain, err := lookahead.Dial(s.GRPC)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(plain.Close)
		_, _, err = plain.Get(context.Background(), "task-0.7", nil)
		Expect(code(err)).To(Equal(codes.Unavailable), "plaintext to a TLS listener: %v", err)
		record("mTLS app→sidecar→origin: Get and a 781-object GetGraph exact; no client cert, wrong CA, plaintext: UNAVAILABLE")
	})

	DescribeTable("a sidecar without the right credentials for its origin answers UNAVAILABLE",
		func(why string, args func() []string, inLog string) {
			o := startTLSOrigin()
			s := startTLSSidecar(o.GRPC, args()...)
			c := dial(s.GRPC, appFiles())
			_, _, err := c.Get(context.Background(), "task-0.7", nil)
			Expect(code(err)).To(Equal(codes.Unavailable), "%s: %v", why, err)
			Expect(err.Error()).To(ContainSubstring(inLog))
			record("%s: UNAVAILABLE (%s)", why, inLog)
		},
		Entry("no client certificate", "sidecar→origin without a client certificate",
			// TLS 1.3: the refusal reaches the client as a "certificate
			// required" alert or as a broken pipe, whichever comes first.
			func() []string { return []string{"--origin-tls-ca", ca.CertFile} }, "origin unavailable"),
		Entry("wrong CA", "sidecar→origin trusting another CA",
			func() []string {
				return []string{"--origin-tls-ca", other.CertFile, "--origin-tls-cert", sidecarAsClient.CertFile, "--origin-tls-key", sidecarAsClient.KeyFile}
			}, "certificate signed by unknown authority"),
		Entry("plaintext", "sidecar→origin in plaintext", func() []string { return nil }, "origin unavailable"),
	)
})
