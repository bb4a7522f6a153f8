package lookahead_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lookahead-dev/lookahead/internal/launch"
)

// sidecarAddr is a real sidecar in front of a real origin seeded with four
// task trees (task-0 … task-3, 781 tasks each), shared by the examples and
// the tests that only read.
var sidecarAddr string

// sidecarMetrics is that sidecar's /metrics URL.
var sidecarMetrics string

// binDir holds the built origin and sidecar, for tests that start their own.
var binDir string

func TestMain(m *testing.M) {
	code := run(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "lookahead-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = filepath.Join(dir, "bin")
	if err := launch.Build(".", binDir, "origin", "sidecar"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	origin, err := startOrigin(filepath.Join(dir, "origin"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer origin.Stop(10 * time.Second)
	sc, err := startSidecar(origin.GRPC)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer sc.Stop(10 * time.Second)
	sidecarAddr, sidecarMetrics = sc.GRPC, sc.MetricsURL()
	return m.Run()
}

func startOrigin(data string, args ...string) (*launch.Process, error) {
	return start("origin", append([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "",
		"--data", data, "--seed", "tasks", "--task-roots", "4"}, args...))
}

func startSidecar(origin string, args ...string) (*launch.Process, error) {
	return start("sidecar", append([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
		"--origin", origin, "--health-interval", "50ms", "--drain-timeout", "2s"}, args...))
}

func start(name string, args []string) (*launch.Process, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := launch.Start(ctx, filepath.Join(binDir, name), args, io.Discard)
	if err != nil {
		return nil, err
	}
	if err := p.WaitServing(ctx); err != nil {
		p.Kill()
		return nil, err
	}
	return p, nil
}
