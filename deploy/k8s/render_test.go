// Package k8s_test checks lookahead's Kubernetes manifests offline: every
// overlay is rendered with the kustomize Go API, every object decoded
// strictly into its API type, and the sidecar's contract (native sidecar,
// gRPC probes, memory sizing, security context, drain time) asserted on the
// result. No cluster is needed; promtool checks the PromQL when present.
package k8s_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/lookahead-dev/lookahead/internal/buildinfo"
	"github.com/lookahead-dev/lookahead/internal/launch"
	"github.com/lookahead-dev/lookahead/internal/metrics"
)

// rendered is one kustomization's output, decoded, by kind and name.
type rendered struct {
	Deployments     map[string]*appsv1.Deployment
	ConfigMaps      map[string]*corev1.ConfigMap // by rendered name, hash suffix included
	Services        map[string]*corev1.Service
	PVCs            map[string]*corev1.PersistentVolumeClaim
	Namespaces      map[string]*corev1.Namespace
	NetworkPolicies map[string]*networkingv1.NetworkPolicy
	PodMonitors     map[string]*monitoringv1.PodMonitor
	PrometheusRules map[string]*monitoringv1.PrometheusRule
}

// render builds the kustomization in dir the way `kubectl kustomize dir`
// does (root-only load restrictions) and decodes every object strictly:
// a field its type does not have fails the test, as does a kind this
// package does not know.
func render(t *testing.T, dir string) *rendered {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	require.NoError(t, err, "kustomize build %s", dir)
	out := &rendered{
		Deployments:     map[string]*appsv1.Deployment{},
		ConfigMaps:      map[string]*corev1.ConfigMap{},
		Services:        map[string]*corev1.Service{},
		PVCs:            map[string]*corev1.PersistentVolumeClaim{},
		Namespaces:      map[string]*corev1.Namespace{},
		NetworkPolicies: map[string]*networkingv1.NetworkPolicy{},
		PodMonitors:     map[string]*monitoringv1.PodMonitor{},
		PrometheusRules: map[string]*monitoringv1.PrometheusRule{},
	}
	for _, r := range m.Resources() {
		doc, err := r.AsYAML()
		require.NoError(t, err)
		id := fmt.Sprintf("%s %s/%s", r.GetKind(), r.GetNamespace(), r.GetName())
		var obj any
		switch gvk := r.GetGvk(); gvk.ApiVersion() + " " + gvk.Kind {
		case "apps/v1 Deployment":
			obj = put(out.Deployments, r.GetName())
		case "v1 ConfigMap":
			obj = put(out.ConfigMaps, r.GetName())
		case "v1 Service":
			obj = put(out.Services, r.GetName())
		case "v1 PersistentVolumeClaim":
			obj = put(out.PVCs, r.GetName())
		case "v1 Namespace":
			obj = put(out.Namespaces, r.GetName())
		case "networking.k8s.io/v1 NetworkPolicy":
			obj = put(out.NetworkPolicies, r.GetName())
		case "monitoring.coreos.com/v1 PodMonitor":
			obj = put(out.PodMonitors, r.GetName())
		case "monitoring.coreos.com/v1 PrometheusRule":
			obj = put(out.PrometheusRules, r.GetName())
		default:
			t.Fatalf("%s: apiVersion %s kind %s is not known to this test; add its type to render", id, gvk.ApiVersion(), gvk.Kind)
		}
		require.NoError(t, yaml.UnmarshalStrict(doc, obj), "%s does not decode strictly:\n%s", id, doc)
	}
	return out
}

// put allocates a T under name in m and returns it for decoding into.
func put[T any](m map[string]*T, name string) *T {
	v := new(T)
	m[name] = v
	return v
}

// configMap returns the ConfigMap a reference by its generator name (as in
// envFrom) resolves to; kustomize appends a content hash to the name.
func (r *rendered) configMap(t *testing.T, ref string) *corev1.ConfigMap {
	t.Helper()
	cm, ok := r.ConfigMaps[ref]
	require.True(t, ok, "ConfigMap %q referenced but not rendered (have %v)", ref, keys(r.ConfigMaps))
	return cm
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// initContainer returns the init container named name, or nil.
func initContainer(spec *corev1.PodSpec, name string) *corev1.Container {
	for i := range spec.InitContainers {
		if spec.InitContainers[i].Name == name {
			return &spec.InitContainers[i]
		}
	}
	return nil
}

// promtool returns promtool's path. Without it the test is skipped, except
// in CI (CI=true), which installs Debian's prometheus package and must run
// every check.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("promtool is not on PATH; CI must install it (Debian package prometheus)")
	}
	t.Skip("promtool is not on PATH (Debian package prometheus): PromQL not checked")
	return ""
}

// runPromtool runs promtool with args in dir and fails the test, showing
// its output, when it does not succeed.
func runPromtool(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

// checkPromQL has promtool parse each expression, by wrapping them as
// recording rules in a temporary rule file.
func checkPromQL(t *testing.T, exprs map[string]string) {
	t.Helper()
	type rule struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var rules []rule
	for _, name := range keys(exprs) {
		rules = append(rules, rule{Record: name, Expr: exprs[name]})
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "check", "rules": rules}}})
	require.NoError(t, err)
	f := filepath.Join(t.TempDir(), "exprs.rules.yml")
	require.NoError(t, os.WriteFile(f, b, 0o644))
	runPromtool(t, "", "check", "rules", f)
}

var (
	metricNamesOnce sync.Once
	metricNames     map[string]bool
)

// knownMetrics is every series name the sidecar can expose, its own
// metric set, the standard gRPC server metrics and the Go and process
// collectors cmd/sidecar registers: each
// collector's name, plus _bucket, _sum and _count for histograms.
func knownMetrics(t *testing.T) map[string]bool {
	t.Helper()
	metricNamesOnce.Do(func() {
		rec := &descRecorder{names: map[string]bool{}}
		metrics.New(rec)
		metrics.NewGRPCServer(rec)
		buildinfo.Get().Register(rec)
		metrics.RegisterCacheSize(rec, nil) // the gauges read their func only when scraped
		metrics.RegisterUnread(rec, nil)
		metrics.RegisterStreamMemory(rec, nil)
		metrics.RegisterWalkMemory(rec, nil)
		metrics.RegisterOriginRequests(rec, nil)
		metrics.RegisterPrefetchQueue(rec, nil)
		rec.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		metricNames = rec.names
	})
	require.NotEmpty(t, metricNames)
	return metricNames
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// descRecorder is a prometheus.Registerer that only notes the names its
// collectors describe.
type descRecorder struct{ names map[string]bool }

func (r *descRecorder) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		m := fqName.FindStringSubmatch(d.String())
		if m == nil {
			return fmt.Errorf("no fqName in %s", d)
		}
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			r.names[m[1]+suffix] = true
		}
	}
	return nil
}

func (r *descRecorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

func (r *descRecorder) Unregister(prometheus.Collector) bool { return false }

var promqlName = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)

// lookaheadNames returns the lookahead_ series names and the recorded
// (colon) names an expression reads. Label values in quotes are skipped.
func lookaheadNames(expr string) (series, recorded []string) {
	expr = regexp.MustCompile(`"[^"]*"`).ReplaceAllString(expr, `""`)
	for _, tok := range promqlName.FindAllString(expr, -1) {
		switch {
		case strings.Contains(tok, ":"):
			recorded = append(recorded, tok)
		case strings.HasPrefix(tok, "lookahead_"), strings.HasPrefix(tok, "grpc_server_"):
			series = append(series, tok)
		}
	}
	return series, recorded
}

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// binaries builds the sidecar and origin once for the whole package.
func binaries(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "lookahead-k8s-test-")
		if binErr == nil {
			binErr = launch.Build("../..", binDir, "origin", "sidecar")
		}
	})
	require.NoError(t, binErr)
	return binDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}
