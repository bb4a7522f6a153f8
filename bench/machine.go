package bench

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// machine describes where the benchmarks ran.
type machine struct {
	Cores     int
	CPU       string
	GoVersion string // of the go tool that built the binaries, and of this program
	Kernel    string
	Host      string
}

func describeMachine(ctx context.Context) machine {
	m := machine{Cores: runtime.NumCPU(), CPU: "unknown", GoVersion: runtime.Version()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(cctx, "go", "version").Output(); err == nil {
		m.GoVersion = strings.TrimSpace(string(out)) + " (this program: " + runtime.Version() + ")"
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	m.Host, _ = os.Hostname()
	return m
}
