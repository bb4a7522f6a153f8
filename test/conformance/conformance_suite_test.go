// Package conformance runs the conformance checker, as a command, against
// real origins: the reference origin over bbolt and the Python example over
// SQLite; and a real sidecar in front of the Python one, which has no
// grpc.health.v1.
package conformance

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

func TestConformance(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "origin conformance")
}

var (
	bin    string // built commands
	python string // a Python with the example's pinned packages
)

const example = "../../examples/python-sqlite-origin"

var _ = BeforeSuite(func() {
	bin = GinkgoT().TempDir()
	Expect(launch.Build("../..", bin, "origin", "sidecar", "conformance")).To(Succeed())
	python = examplePython()
})

// examplePython returns the example's virtual environment's Python,
// creating it and installing requirements.txt's pins (from PyPI) first.
func examplePython() string {
	venv, err := filepath.Abs(filepath.Join(example, ".venv"))
	Expect(err).NotTo(HaveOccurred())
	py := filepath.Join(venv, "bin", "python")
	if _, err := os.Stat(py); err != nil {
		base := "python3.11"
		if _, err := exec.LookPath(base); err != nil {
			base = "python3"
		}
		out, err := exec.Command(base, "-m", "venv", venv).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "creating %s: %s", venv, out)
	}
	out, err := exec.Command(py, "-m", "pip", "install", "-q", "--disable-pip-version-check",
		"-r", filepath.Join(example, "requirements.txt")).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "installing the example's requirements: %s", out)
	return py
}

func start(binary string, args ...string) *launch.Process {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := launch.Start(ctx, binary, args, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = p.Stop(10 * time.Second) })
	return p
}

func startBolt() *launch.Process {
	p := start(filepath.Join(bin, "origin"), "--listen", "127.0.0.1:0", "--metrics-listen", "",
		"--data", GinkgoT().TempDir(), "--seed", "tasks", "--task-roots", "2")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	Expect(p.WaitServing(ctx)).To(Succeed())
	return p
}

func startPython() *launch.Process {
	return start(python, filepath.Join(example, "origin.py"), "--listen", "127.0.0.1:0",
		"--db", filepath.Join(GinkgoT().TempDir(), "origin.sqlite"))
}

// check runs the conformance command and returns its output and exit code.
func check(args ...string) (string, int) {
	cmd := exec.Command(filepath.Join(bin, "conformance"), args...)
	out, err := cmd.CombinedOutput()
	GinkgoWriter.Printf("%s\n", out)
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	}
	Expect(err).NotTo(HaveOccurred())
	return string(out), 0
}
