// Package faults runs a real sidecar and a real origin with an in-process
// toxiproxy between them and breaks the link in the ways networks break:
// the origin goes away, answers too slowly, resets connections, crawls, and
// flaps. Each case checks that cached objects keep being served, that the
// rest fail fast with UNAVAILABLE or DEADLINE_EXCEEDED, that the breaker
// stops the sidecar from hammering a dead origin, that nothing partial or
// wrong stays in the cache, and that goroutines and full service come back.
package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lookahead-dev/lookahead"
	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/launch"
	"github.com/lookahead-dev/lookahead/internal/scrape"
)

func TestFaults(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "lookahead under faults")
	// Every proxy link, client connection and process is gone by now.
	goleak.VerifyNone(t, goleak.IgnoreCurrent())
}

var (
	bin    string
	toxics *toxiproxy.ApiServer
	want   map[string]*graph.Object // the origin's dataset, generated here with its parameters
)

// The origin runs with --seed tasks --task-roots 4 and its defaults
// --task-fanout 5 --task-levels 5 --payload-bytes 10 --dataset-seed 1.
var dataset = graph.TaskTrees{Roots: 4, Fanout: 5, Levels: 5, PayloadBytes: 10, Seed: 1}

var _ = BeforeSuite(func() {
	bin = GinkgoT().TempDir()
	Expect(launch.Build("../..", bin, "origin", "sidecar")).To(Succeed())
	zerolog.SetGlobalLevel(zerolog.WarnLevel) // toxiproxy's toxics log through zerolog's global logger
	toxics = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	want = map[string]*graph.Object{}
	Expect(dataset.Generate(func(o *graph.Object) error { want[o.ID] = o; return nil })).To(Succeed())
	Expect(want).To(HaveLen(4 * 781))
})

// outcomes collects one line per case for the README table.
var outcomes struct {
	sync.Mutex
	rows []string
}

func record(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	outcomes.Lock()
	outcomes.rows = append(outcomes.rows, CurrentSpecReport().LeafNodeText+": "+line)
	outcomes.Unlock()
	GinkgoWriter.Println("observed:", line)
	AddReportEntry("observed", line)
}

var _ = ReportAfterSuite("observed outcomes", func(r Report) {
	outcomes.Lock()
	defer outcomes.Unlock()
	sort.Strings(outcomes.rows)
	if path := os.Getenv("FAULTS_OUTCOMES"); path != "" {
		_ = os.WriteFile(path, []byte(strings.Join(outcomes.rows, "\n")+"\n"), 0o644)
	}
})

// startOrigin runs the reference origin seeded with the dataset.
func startOrigin(args ...string) *launch.Process {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := launch.Start(ctx, filepath.Join(bin, "origin"), append([]string{
		"--listen", "127.0.0.1:0", "--metrics-listen", "", "--data", GinkgoT().TempDir(),
		"--seed", "tasks", "--task-roots", "4",
	}, args...), GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = p.Stop(10 * time.Second) })
	return p
}

// link is a toxiproxy proxy in front of an origin.
type link struct{ *toxiproxy.Proxy }

var links atomic.Int64

func newLink(upstream string) *link {
	p := toxiproxy.NewProxy(toxics, fmt.Sprintf("origin-%d", links.Add(1)), "127.0.0.1:0", upstream)
	Expect(p.Start()).To(Succeed())
	DeferCleanup(p.Stop)
	return &link{p}
}

// toxic adds a toxic, e.g. toxic("latency", "downstream", `{"latency": 2000}`),
// and returns a func that removes it.
func (l *link) toxic(typ, stream, attrs string) func() {
	name := typ + "_" + stream
	_, err := l.Toxics.AddToxicJson(strings.NewReader(fmt.Sprintf(
		`{"name": %q, "type": %q, "stream": %q, "attributes": %s}`, name, typ, stream, attrs)))
	Expect(err).NotTo(HaveOccurred())
	return func() { Expect(l.Toxics.RemoveToxic(context.Background(), name)).To(Succeed()) }
}

func (l *link) down() { l.Stop() }
func (l *link) up()   { Expect(l.Start()).To(Succeed()) }

// sidecar is a running sidecar with a client.
type sidecar struct {
	*launch.Process
	c *lookahead.Client
}

// Defaults of the suite's sidecars: a quick health check; change-stream
// trust long enough that the coherence grace never expires inside a case
// (what is tested here is the origin link, not TTL policy).
var sidecarDefaults = []string{
	"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
	"--health-interval", "50ms", "--drain-timeout", "5s", "--watch-grace", "1m",
}

func startSidecar(originAddr string, args ...string) *sidecar {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := launch.Start(ctx, filepath.Join(bin, "sidecar"),
		append(append(append([]string{}, sidecarDefaults...), "--origin", originAddr), args...), GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(p.Stop(10*time.Second)).To(Succeed(), "the sidecar stops cleanly after the fault") })
	Expect(p.WaitServing(ctx)).To(Succeed())
	c, err := lookahead.Dial(p.GRPC)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(c.Close)
	return &sidecar{Process: p, c: c}
}

func (s *sidecar) metrics() scrape.Samples {
	m, err := scrape.Fetch(context.Background(), s.MetricsURL())
	Expect(err).NotTo(HaveOccurred())
	return m
}

func (s *sidecar) metric(name string, labels ...string) float64 {
	return s.metrics().Sum(name, labels...)
}

// dataRoundTrips counts origin reads (BatchGet, Expand): the change
// stream's reconnects are the watcher's business, not the breaker's.
func (s *sidecar) dataRoundTrips() float64 {
	m := s.metrics()
	return m.Sum("lookahead_origin_round_trips_total", "rpc", "BatchGet") + m.Sum("lookahead_origin_round_trips_total", "rpc", "Expand")
}

func (s *sidecar) goroutines() float64 { return s.metric("go_goroutines") }

func (s *sidecar) get(timeout time.Duration, id string) (*lookaheadv1.Object, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	o, _, err := s.c.Get(ctx, id, nil)
	return o, err
}

// graphOf streams the whole tree below root and returns what arrived
// (checked object by object against the dataset) and the call's error.
func (s *sidecar) graphOf(timeout time.Duration, root string, each func(*lookaheadv1.Object)) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ids := []string{}
	_, err := s.c.GetGraph(ctx, lookahead.Graph{Roots: []string{root}, Depth: lookahead.Uint32(4)}, func(r lookahead.Result) error {
		expectExact(r.Object)
		ids = append(ids, r.Object.GetId())
		if each != nil {
			each(r.Object)
		}
		return nil
	})
	return ids, err
}

// expectExact checks one object against the dataset: never a partial or
// corrupted copy.
func expectExact(o *lookaheadv1.Object) {
	GinkgoHelper()
	w, ok := want[o.GetId()]
	Expect(ok).To(BeTrue(), "object %q is not in the dataset", o.GetId())
	Expect(o.GetPayload()).To(Equal(w.Payload), "payload of %s", o.GetId())
	Expect(o.GetType()).To(Equal(w.Type), "type of %s", o.GetId())
	refs := make([]string, len(o.GetRefs()))
	for i, r := range o.GetRefs() {
		refs[i] = r.GetField() + ":" + r.GetId()
	}
	wrefs := make([]string, len(w.Refs))
	for i, r := range w.Refs {
		wrefs[i] = r.Field + ":" + r.ID
	}
	Expect(refs).To(Equal(wrefs), "refs of %s", o.GetId())
}

// treeIDs is the ids of root's tree in breadth-first order.
func treeIDs(root string) []string {
	var ids []string
	_ = dataset.Generate(func(o *graph.Object) error {
		if o.ID == root || strings.HasPrefix(o.ID, root+".") {
			ids = append(ids, o.ID)
		}
		return nil
	})
	return ids
}

// expectWholeDataset walks every tree with GetGraph and compares ids and
// objects with the dataset: after a fault, the cache holds nothing partial
// or wrong.
func (s *sidecar) expectWholeDataset() {
	GinkgoHelper()
	for r := 0; r < dataset.Roots; r++ {
		root := dataset.RootID(r)
		ids, err := s.graphOf(10*time.Second, root, nil)
		Expect(err).NotTo(HaveOccurred(), "GetGraph %s", root)
		Expect(ids).To(Equal(treeIDs(root)), "tree %s", root)
	}
}

// waitOriginServes waits until the sidecar answers an id it must fetch
// from the origin: the link is up, the breaker closed.
func (s *sidecar) waitOriginServes() {
	GinkgoHelper()
	const id = "task-3.5"
	Eventually(func() error {
		if _, err := s.c.Service().Invalidate(context.Background(), &lookaheadv1.InvalidateRequest{Ids: []string{id}}); err != nil {
			return err
		}
		_, err := s.get(time.Second, id)
		return err
	}).WithTimeout(10*time.Second).WithPolling(20*time.Millisecond).Should(Succeed(), "the origin serves again")
}

// settle waits for the sidecar's goroutines to come back near baseline and
// returns where they settled.
func (s *sidecar) settle(baseline float64) float64 {
	GinkgoHelper()
	var g float64
	Eventually(func() float64 { g = s.goroutines(); return g }).WithTimeout(10*time.Second).
		Should(BeNumerically("<=", baseline+10), "goroutines back near the baseline of %v", baseline)
	return g
}

func code(err error) codes.Code { return status.Code(err) }
