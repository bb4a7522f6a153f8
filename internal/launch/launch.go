// Package launch starts lookahead's binaries as child processes on free
// ports and stops them: the demo, the end-to-end suites and the benchmarks
// all run the real origin and sidecar this way.
package launch

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Process is a running origin or sidecar.
type Process struct {
	Name    string
	GRPC    string // bound gRPC address
	Metrics string // bound metrics address; empty when disabled
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	waitErr error         // set before done is closed
	log     *Buffer
	stopped sync.Once
}

// Build compiles the named commands (e.g. "origin", "sidecar") of the module
// rooted at moduleDir into dir.
func Build(moduleDir, dir string, cmds ...string) error {
	for _, c := range cmds {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, c), "./cmd/"+c)
		cmd.Dir = moduleDir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %w\n%s", c, err, out)
		}
	}
	return nil
}

// Start runs bin with args plus --addr-file and waits until the process has
// written its addresses. Its stderr is kept (see Log) and copied to logTo
// when logTo is non-nil.
func Start(ctx context.Context, bin string, args []string, logTo io.Writer) (*Process, error) {
	dir, err := os.MkdirTemp("", "lookahead-launch-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	addrFile := filepath.Join(dir, "addr")
	p := &Process{Name: filepath.Base(bin), done: make(chan struct{}), log: &Buffer{}}
	p.cmd = exec.Command(bin, append(args, "--addr-file", addrFile)...)
	var w io.Writer = p.log
	if logTo != nil {
		w = io.MultiWriter(p.log, logTo)
	}
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() { p.waitErr = p.cmd.Wait(); close(p.done) }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(addrFile); err == nil && len(b) > 0 {
			p.parseAddrs(string(b))
			if p.GRPC != "" {
				return p, nil
			}
		}
		select {
		case <-ctx.Done():
			p.Kill()
			return nil, fmt.Errorf("%s did not start: %w\n%s", p.Name, ctx.Err(), p.Log())
		case <-p.done:
			return nil, fmt.Errorf("%s exited at start: %v\n%s", p.Name, p.waitErr, p.Log())
		case <-tick.C:
		}
	}
}

// parseAddrs reads "grpc ADDR" and "metrics ADDR" lines; a bare address is
// the gRPC one.
func (p *Process) parseAddrs(s string) {
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 1 && p.GRPC == "":
			p.GRPC = f[0]
		case len(f) == 2 && f[0] == "grpc" && p.GRPC == "":
			p.GRPC = f[1]
		case len(f) == 2 && f[0] == "metrics":
			p.Metrics = f[1]
		}
	}
}

// PID is the process's id, e.g. to read its memory from /proc.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// MetricsURL is the process's /metrics URL.
func (p *Process) MetricsURL() string { return "http://" + p.Metrics + "/metrics" }

// WaitServing polls the standard gRPC health service until it answers
// SERVING or ctx ends.
func (p *Process) WaitServing(ctx context.Context) error {
	cc, err := grpc.NewClient(p.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cc.Close()
	hc := healthpb.NewHealthClient(cc)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		resp, err := hc.Check(cctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not serving: %w (last: %v)", p.Name, ctx.Err(), err)
		case <-p.done:
			return fmt.Errorf("%s exited: %v\n%s", p.Name, p.waitErr, p.Log())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stop sends SIGTERM and waits for a graceful exit, killing the process
// after grace. It returns the exit error of a process that did not stop
// cleanly; calling it again returns nil.
func (p *Process) Stop(grace time.Duration) error {
	var err error
	p.stopped.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
			err = p.waitErr
		case <-time.After(grace):
			_ = p.cmd.Process.Kill()
			<-p.done
			err = fmt.Errorf("%s: killed after %v without stopping", p.Name, grace)
		}
	})
	return err
}

// Kill ends the process at once.
func (p *Process) Kill() {
	p.stopped.Do(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Log returns what the process wrote so far.
func (p *Process) Log() string { return p.log.String() }

// Buffer is a bytes.Buffer that one goroutine may write (a process's
// output, a logger) while another reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
