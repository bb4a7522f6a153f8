// Package readme runs the README's grpcurl examples, as written, against a
// real origin and sidecar, with the grpcurl pinned in tools/go.mod.
package readme

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/launch"
)

func TestReadme(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "README examples")
}

const (
	readme = "../../README.md"
	marker = "<!-- grpcurl-examples -->"
	// The address the examples use: the sidecar's default, replaced by the
	// one the test's sidecar bound.
	exampleAddr = "127.0.0.1:7070"
)

var bin string

var _ = BeforeSuite(func() {
	bin = GinkgoT().TempDir()
	Expect(launch.Build("../..", bin, "origin", "sidecar")).To(Succeed())
	build := exec.Command("go", "build", "-modfile=tools/go.mod", "-o", filepath.Join(bin, "grpcurl"), "github.com/fullstorydev/grpcurl/cmd/grpcurl")
	build.Dir = "../.."
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "building the pinned grpcurl: %s", out)
})

// examples returns the lines of the shell block that follows the marker.
func examples() []string {
	b, err := os.ReadFile(readme)
	Expect(err).NotTo(HaveOccurred())
	_, rest, ok := strings.Cut(string(b), marker)
	Expect(ok).To(BeTrue(), "the README marks its grpcurl block with %s", marker)
	_, rest, ok = strings.Cut(rest, "```sh\n")
	Expect(ok).To(BeTrue())
	block, _, ok := strings.Cut(rest, "```")
	Expect(ok).To(BeTrue())
	return strings.Split(strings.TrimSpace(block), "\n")
}

var wantCode = regexp.MustCompile(`#\s*Code:\s*(\w+)`)

var _ = Describe("the README's grpcurl examples", func() {
	It("cover every sidecar RPC, health and reflection", func() {
		block := strings.Join(examples(), "\n")
		want := []string{" list", "grpc.health.v1.Health/Check"}
		for _, m := range lookaheadv1.SidecarService_ServiceDesc.Methods {
			want = append(want, "lookahead.v1.SidecarService/"+m.MethodName)
		}
		for _, s := range lookaheadv1.SidecarService_ServiceDesc.Streams {
			want = append(want, "lookahead.v1.SidecarService/"+s.StreamName)
		}
		for _, w := range want {
			Expect(block).To(MatchRegexp(regexp.QuoteMeta(w)+`(\s|$)`), "add a grpcurl example of %s to the README", strings.TrimSpace(w))
		}
	})

	It("run as written against the origin and sidecar started as the README says", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		// bin/origin --data ./data/origin --seed tasks, with two trees
		// rather than 500 and free ports.
		origin, err := launch.Start(ctx, filepath.Join(bin, "origin"), []string{
			"--data", GinkgoT().TempDir(), "--seed", "tasks", "--task-roots", "2",
			"--listen", "127.0.0.1:0", "--metrics-listen", "",
		}, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = origin.Stop(10 * time.Second) })
		Expect(origin.WaitServing(ctx)).To(Succeed())
		// bin/sidecar --origin 127.0.0.1:7071, on a free port.
		sidecar, err := launch.Start(ctx, filepath.Join(bin, "sidecar"), []string{
			"--origin", origin.GRPC, "--listen", "127.0.0.1:0", "--metrics-listen", "", "--health-interval", "50ms",
		}, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = sidecar.Stop(10 * time.Second) })
		Expect(sidecar.WaitServing(ctx)).To(Succeed())

		for _, line := range examples() {
			Expect(line).To(HavePrefix("grpcurl "), "every line of the block is a grpcurl command")
			Expect(line).To(ContainSubstring(exampleAddr))
			cmd := exec.CommandContext(ctx, "sh", "-c", strings.ReplaceAll(line, exampleAddr, sidecar.GRPC))
			cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			GinkgoWriter.Printf("$ %s\n%s\n", line, out)
			if m := wantCode.FindStringSubmatch(line); m != nil {
				Expect(err).To(HaveOccurred(), "%s\nsucceeded; the README says it fails with %s", line, m[1])
				Expect(string(out)).To(ContainSubstring("Code: "+m[1]), line)
				continue
			}
			Expect(err).NotTo(HaveOccurred(), "%s\n%s", line, out)
		}
	})
})
