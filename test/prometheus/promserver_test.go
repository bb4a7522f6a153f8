package prometheus_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/lookahead-dev/lookahead/internal/launch"
)

// promServer is a Prometheus server run as a child process on a loopback
// port, with its own config and storage.
type promServer struct {
	URL     string // http://127.0.0.1:PORT
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	waitErr error         // set before done is closed
	log     launch.Buffer
	stopped sync.Once
}

// startPrometheus writes a config that scrapes target every second as job
// and loads ruleFile, starts the server and waits until it is ready.
func startPrometheus(ctx context.Context, bin, dir, job, target, ruleFile string) (*promServer, error) {
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
- %q
scrape_configs:
- job_name: %q
  static_configs:
  - targets: [%q]
`, ruleFile, job, target)
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	p := &promServer{URL: "http://" + addr, done: make(chan struct{})}
	p.cmd = exec.Command(bin,
		"--config.file="+cfgFile,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	w := io.MultiWriter(&p.log, GinkgoWriter)
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting prometheus: %w", err)
	}
	go func() { p.waitErr = p.cmd.Wait(); close(p.done) }()
	for {
		if resp, err := http.Get(p.URL + "/-/ready"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-ctx.Done():
			_ = p.Stop(0)
			return nil, fmt.Errorf("prometheus not ready: %w\n%s", ctx.Err(), p.log.String())
		case <-p.done:
			return nil, fmt.Errorf("prometheus exited at start: %v\n%s", p.waitErr, p.log.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freeLoopbackAddr picks a free port. Prometheus takes an address, not a
// listener, so there is a short window in which another process could take
// it; startPrometheus then fails with Prometheus' bind error.
func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Stop sends SIGTERM and waits up to grace before killing. Calling it
// again returns nil.
func (p *promServer) Stop(grace time.Duration) error {
	var err error
	p.stopped.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
			var exit *exec.ExitError
			if errors.As(p.waitErr, &exit) {
				err = fmt.Errorf("prometheus: %w\n%s", p.waitErr, p.log.String())
			}
		case <-time.After(grace):
			_ = p.cmd.Process.Kill()
			<-p.done
			err = fmt.Errorf("prometheus: killed after %v without stopping", grace)
		}
	})
	return err
}

// sample is one element of an instant vector.
type sample struct {
	Metric map[string]string
	Value  float64
}

// Query runs an instant query through /api/v1/query.
func (p *promServer) Query(q string) ([]sample, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := p.get("/api/v1/query?query="+url.QueryEscape(q), &data); err != nil {
		return nil, fmt.Errorf("query %q: %w", q, err)
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: result type %s, want vector", q, data.ResultType)
	}
	out := make([]sample, 0, len(data.Result))
	for _, r := range data.Result {
		s, ok := r.Value[1].(string)
		if !ok {
			return nil, fmt.Errorf("query %q: value %v", q, r.Value)
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("query %q: %w", q, err)
		}
		out = append(out, sample{Metric: r.Metric, Value: v})
	}
	return out, nil
}

// Scalar runs q and returns its single sample's value.
func (p *promServer) Scalar(q string) (float64, error) {
	s, err := p.Query(q)
	if err != nil {
		return 0, err
	}
	if len(s) != 1 {
		return 0, fmt.Errorf("query %q: %d samples, want 1", q, len(s))
	}
	return s[0].Value, nil
}

// rule is one rule as /api/v1/rules reports it.
type rule struct {
	Name      string `json:"name"`
	Type      string `json:"type"` // recording or alerting
	Health    string `json:"health"`
	LastError string `json:"lastError"`
}

// Rules lists every loaded rule.
func (p *promServer) Rules() ([]rule, error) {
	var data struct {
		Groups []struct {
			Rules []rule `json:"rules"`
		} `json:"groups"`
	}
	if err := p.get("/api/v1/rules", &data); err != nil {
		return nil, err
	}
	var out []rule
	for _, g := range data.Groups {
		out = append(out, g.Rules...)
	}
	return out, nil
}

// get fetches an API path and decodes the data of a success envelope.
func (p *promServer) get(path string, data any) error {
	resp, err := http.Get(p.URL + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var env struct {
		Status    string          `json:"status"`
		Data      json.RawMessage `json:"data"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return fmt.Errorf("%s: %s: %w", path, resp.Status, err)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s: %s: %s", path, env.ErrorType, env.Error)
	}
	return json.Unmarshal(env.Data, data)
}
