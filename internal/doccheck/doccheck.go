// Package doccheck compares the README with what the binaries really have:
// its metric and configuration tables against the collectors the binaries
// register and the flags they define.
package doccheck

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Section returns the text under the markdown heading whose title is
// exactly title ("## Metrics" or "### sidecar metrics" both match their
// title), up to the next heading of the same or a higher level.
func Section(path, title string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	lines := strings.Split(string(b), "\n")
	level, start := 0, -1
	fence := false
	for i, l := range lines {
		if strings.HasPrefix(l, "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(l, "#") {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, "#"))
		switch {
		case start < 0 && strings.TrimSpace(l[n:]) == title:
			level, start = n, i+1
		case start >= 0 && n <= level:
			return strings.Join(lines[start:i], "\n"), nil
		}
	}
	if start < 0 {
		return "", fmt.Errorf("%s: no heading %q", path, title)
	}
	return strings.Join(lines[start:], "\n"), nil
}

var code = regexp.MustCompile("`([^`]+)`")

// TableNames returns the names in backticks in the first column of every
// table row of text ("| `a`, `b` | ... |" gives a and b), sorted.
func TableNames(text string) []string {
	var names []string
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, "|") {
			continue
		}
		cells := strings.Split(l, "|")
		if len(cells) < 3 {
			continue
		}
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			names = append(names, m[1])
		}
	}
	sort.Strings(names)
	return names
}

// Recorder is a prometheus registry that also notes the name of every
// metric its collectors describe: give it to the code that registers a
// binary's collectors, then ask Names.
type Recorder struct {
	*prometheus.Registry
	mu    sync.Mutex
	names map[string]bool
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{Registry: prometheus.NewRegistry(), names: map[string]bool{}}
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// Register implements prometheus.Registerer.
func (r *Recorder) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	var names []string
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			names = append(names, m[1])
		}
	}
	if err := r.Registry.Register(c); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		r.names[n] = true
	}
	return nil
}

// MustRegister implements prometheus.Registerer.
func (r *Recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// Names returns the metric names registered so far, sorted, leaving out
// those with one of the prefixes given (such as "go_", "process_").
func (r *Recorder) Names(except ...string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
next:
	for n := range r.names {
		for _, p := range except {
			if strings.HasPrefix(n, p) {
				continue next
			}
		}
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// SameNames fails t unless the first column of the README table under
// heading names exactly have: each missing row and each stale row is
// reported; what names the kind of thing ("metric", "flag").
func SameNames(t *testing.T, readme, heading, what string, have []string) {
	t.Helper()
	section, err := Section(readme, heading)
	require.NoError(t, err)
	documented := TableNames(section)
	for _, n := range have {
		assert.Contains(t, documented, n, "%s %s has no row in the README's %q table: add one", what, n, heading)
	}
	for _, n := range documented {
		assert.Contains(t, have, n, "the README's %q table documents %s %s, which does not exist", heading, what, n)
	}
}

// MetricsDocumented runs a binary until it serves, with a Recorder as the
// registry it registers its collectors in, stops it, and compares the
// metrics it registered with the names in the README's table under title,
// both ways. The Go runtime's, the process's and the /metrics handler's
// own are documented as families, so they are left out.
func MetricsDocumented(t *testing.T, readme, title, addrFile string,
	run func(ctx context.Context, reg *Recorder) error) {
	t.Helper()
	rec := NewRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, rec) }()
	require.Eventually(t, func() bool {
		_, err := os.Stat(addrFile)
		return err == nil
	}, 30*time.Second, 10*time.Millisecond, "the command writes its addresses once serving")
	cancel()
	require.NoError(t, <-done)
	SameNames(t, readme, title, "metric", rec.Names("go_", "process_", "promhttp_"))
}

// Flags turns name=value settings into --name flags, with the action flags
// that are not settings (--check-config, --version) added.
func Flags(settings []string) []string {
	flags := []string{"--check-config", "--version"}
	for _, s := range settings {
		name, _, _ := strings.Cut(s, "=")
		flags = append(flags, "--"+name)
	}
	return flags
}
