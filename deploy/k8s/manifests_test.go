package k8s_test

import (
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

const (
	sidecarName  = "lookahead"             // the sidecar's container name
	sidecarLabel = "lookahead.dev/sidecar" // opts a Deployment in; marks its pods
	configName   = "lookahead-sidecar"     // the generated ConfigMap, before its hash suffix
	appName      = "example-app"
	originName   = "lookahead-origin"

	// Memory sizing rule (README.md): limit = (cache + prefetch) × 1.5 + 64Mi,
	// GOMEMLIMIT ≈ 90% of the limit.
	sizingFactor   = 1.5
	sizingBaseline = 64 << 20
)

// overlay is what one rendering must show beyond the common contract.
type overlay struct {
	name, dir       string
	namespace       string // "" for the base
	appReplicas     int32
	cacheBytes      string // LOOKAHEAD_SIDECAR_CACHE_BYTES
	logLevel        string // LOOKAHEAD_SIDECAR_LOG_LEVEL
	sidecarImage    string
	monitoring      bool // PodMonitors, PrometheusRule and the dashboard
	pinnedImages    bool // no :latest, no untagged images
	restrictedNSPSA bool // the namespace enforces the restricted pod security standard
}

var overlays = []overlay{
	{name: "base", dir: "base", appReplicas: 1, cacheBytes: "256MiB", logLevel: "info", sidecarImage: "lookahead-sidecar"},
	{name: "dev", dir: "overlays/dev", namespace: "lookahead-dev", appReplicas: 1, cacheBytes: "64MiB", logLevel: "debug",
		sidecarImage: "localhost/lookahead/sidecar:dev", restrictedNSPSA: true},
	{name: "prod", dir: "overlays/prod", namespace: "lookahead", appReplicas: 3, cacheBytes: "1GiB", logLevel: "info",
		sidecarImage: "registry.invalid/lookahead/sidecar:v0.1.0", monitoring: true, pinnedImages: true, restrictedNSPSA: true},
}

// sidecarConfig is the rendered sidecar of one pod template and its settings.
type sidecarConfig struct {
	pod    *corev1.PodSpec
	meta   *metav1.ObjectMeta
	c      *corev1.Container
	config map[string]string // the ConfigMap's data
}

func sidecarOf(t *testing.T, r *rendered, deployment string) *sidecarConfig {
	t.Helper()
	d, ok := r.Deployments[deployment]
	require.True(t, ok, "Deployment %s not rendered (have %v)", deployment, keys(r.Deployments))
	pod := &d.Spec.Template.Spec
	c := initContainer(pod, sidecarName)
	require.NotNil(t, c, "%s: no init container %q", deployment, sidecarName)
	require.Len(t, c.EnvFrom, 1, "%s: the sidecar reads one ConfigMap", deployment)
	require.NotNil(t, c.EnvFrom[0].ConfigMapRef)
	cm := r.configMap(t, c.EnvFrom[0].ConfigMapRef.Name)
	return &sidecarConfig{pod: pod, meta: &d.Spec.Template.ObjectMeta, c: c, config: cm.Data}
}

func TestOverlays(t *testing.T) {
	for _, o := range overlays {
		t.Run(o.name, func(t *testing.T) {
			r := render(t, o.dir)
			sc := sidecarOf(t, r, appName)
			app := r.Deployments[appName]

			t.Run("namespace", func(t *testing.T) {
				if o.namespace == "" {
					return
				}
				ns, ok := r.Namespaces[o.namespace]
				require.True(t, ok, "Namespace %s not rendered", o.namespace)
				if o.restrictedNSPSA {
					assert.Equal(t, "restricted", ns.Labels["pod-security.kubernetes.io/enforce"])
				}
				for name, d := range r.Deployments {
					assert.Equal(t, o.namespace, d.Namespace, "Deployment %s", name)
				}
			})

			t.Run("native sidecar", func(t *testing.T) {
				require.NotNil(t, sc.c.RestartPolicy, "restartPolicy must be Always for a native sidecar")
				assert.Equal(t, corev1.ContainerRestartPolicyAlways, *sc.c.RestartPolicy)
				for _, c := range sc.pod.Containers {
					assert.NotEqual(t, sidecarName, c.Name, "the sidecar must not be a regular container")
				}
				assert.Equal(t, "enabled", sc.meta.Labels[sidecarLabel], "pods carry the label the PodMonitor selects")
				assert.Equal(t, o.sidecarImage, sc.c.Image)
				require.NotNil(t, app.Spec.Replicas)
				assert.Equal(t, o.appReplicas, *app.Spec.Replicas)
			})

			t.Run("config", func(t *testing.T) {
				assert.Equal(t, o.cacheBytes, sc.config["LOOKAHEAD_SIDECAR_CACHE_BYTES"])
				assert.Equal(t, o.logLevel, sc.config["LOOKAHEAD_SIDECAR_LOG_LEVEL"])
				assert.Empty(t, sc.c.Args, "the sidecar reads its ConfigMap from the environment")
				for k := range sc.config {
					assert.True(t, strings.HasPrefix(k, "LOOKAHEAD_SIDECAR_"), "ConfigMap key %s: the sidecar reads LOOKAHEAD_SIDECAR_* only", k)
				}
			})

			t.Run("settings parse in the real binaries", func(t *testing.T) {
				bin := binaries(t)
				settings := checkSidecarConfig(t, filepath.Join(bin, "sidecar"), sc)
				assert.Contains(t, settings, "cache-bytes="+o.cacheBytes)
				assert.Contains(t, settings, "log-level="+o.logLevel)
				origin := r.Deployments[originName].Spec.Template.Spec.Containers[0]
				assertFlagsParse(t, filepath.Join(bin, "origin"), origin.Args)
			})

			t.Run("listen addresses and probes", func(t *testing.T) {
				grpcPort := listenPort(t, sc.config["LOOKAHEAD_SIDECAR_LISTEN"], true)
				metricsPort := listenPort(t, sc.config["LOOKAHEAD_SIDECAR_METRICS_LISTEN"], true)
				probes := map[string]*corev1.Probe{
					"startupProbe":   sc.c.StartupProbe,
					"readinessProbe": sc.c.ReadinessProbe,
					"livenessProbe":  sc.c.LivenessProbe,
				}
				for name, p := range probes {
					require.NotNil(t, p, name)
					require.NotNil(t, p.GRPC, "%s must be a gRPC probe on the health service", name)
					assert.Equal(t, grpcPort, p.GRPC.Port, "%s must dial the gRPC listener", name)
					if name == "livenessProbe" {
						// A restart empties the cache: liveness must not follow
						// the origin, which the overall status does.
						require.NotNil(t, p.GRPC.Service, "liveness checks the liveness service")
						assert.Equal(t, "liveness", *p.GRPC.Service)
						continue
					}
					assert.True(t, p.GRPC.Service == nil || *p.GRPC.Service == "", "%s checks the server's overall status", name)
				}
				assert.Equal(t, map[string]int32{"la-grpc": grpcPort, "la-metrics": metricsPort}, containerPorts(sc.c))
				assert.Equal(t, "true", sc.meta.Annotations["prometheus.io/scrape"])
				assert.Equal(t, strconv.Itoa(int(metricsPort)), sc.meta.Annotations["prometheus.io/port"])
				// The application dials the sidecar over loopback.
				assert.Contains(t, envOf(app.Spec.Template.Spec.Containers[0]), "CACHE_ADDR")
				assert.Equal(t, fmt.Sprintf("127.0.0.1:%d", grpcPort), envOf(app.Spec.Template.Spec.Containers[0])["CACHE_ADDR"])
				assert.Equal(t, fmt.Sprintf("%s:7071", originName), sc.config["LOOKAHEAD_SIDECAR_ORIGIN"])
			})

			t.Run("memory sized from the cache budget", func(t *testing.T) {
				limit, ok := sc.c.Resources.Limits[corev1.ResourceMemory]
				require.True(t, ok, "the sidecar needs a memory limit")
				request := sc.c.Resources.Requests[corev1.ResourceMemory]
				assert.Zero(t, limit.Cmp(request), "memory request %s must equal the limit %s: the cache fills to its budget", &request, &limit)
				_, cpuLimit := sc.c.Resources.Limits[corev1.ResourceCPU]
				assert.False(t, cpuLimit, "no CPU limit: throttling shows up as latency")
				assert.Contains(t, sc.c.Resources.Requests, corev1.ResourceCPU)

				budget := parseBytes(t, sc.config["LOOKAHEAD_SIDECAR_CACHE_BYTES"]) + parseBytes(t, sc.config["LOOKAHEAD_SIDECAR_PREFETCH_BYTES"])
				want := int64(math.Ceil(float64(budget)*sizingFactor)) + sizingBaseline
				assert.GreaterOrEqual(t, limit.Value(), want, "limit %s < (cache + prefetch) × 1.5 + 64Mi = %dMi", &limit, want>>20)
				assert.LessOrEqual(t, limit.Value(), want+(32<<20), "limit %s is far above the rule's %dMi: update the rule or the limit", &limit, want>>20)

				gml, ok := envOf(*sc.c)["GOMEMLIMIT"]
				require.True(t, ok, "the sidecar needs GOMEMLIMIT")
				ratio := float64(parseBytes(t, gml)) / float64(limit.Value())
				assert.InDelta(t, 0.9, ratio, 0.02, "GOMEMLIMIT %s is %.0f%% of the limit %s, want ~90%%", gml, 100*ratio, &limit)
			})

			t.Run("security context", func(t *testing.T) {
				for name, d := range r.Deployments {
					pod := d.Spec.Template.Spec
					assert.False(t, pod.HostNetwork, "%s: hostNetwork", name)
					if assert.NotNil(t, pod.AutomountServiceAccountToken, name) {
						assert.False(t, *pod.AutomountServiceAccountToken, "%s: no API access needed", name)
					}
					for _, c := range append(append([]corev1.Container{}, pod.InitContainers...), pod.Containers...) {
						checkSecurity(t, name+"/"+c.Name, pod.SecurityContext, c.SecurityContext)
					}
				}
			})

			t.Run("grace period covers the drain", func(t *testing.T) {
				drain, err := time.ParseDuration(sc.config["LOOKAHEAD_SIDECAR_DRAIN_TIMEOUT"])
				require.NoError(t, err)
				require.NotNil(t, sc.pod.TerminationGracePeriodSeconds)
				grace := time.Duration(*sc.pod.TerminationGracePeriodSeconds) * time.Second
				// The application stops first, then the sidecar drains, all
				// within one grace period: leave the application most of it.
				assert.Greater(t, grace, drain, "terminationGracePeriodSeconds must exceed the sidecar's --drain-timeout")
				assert.GreaterOrEqual(t, grace, 2*drain+10*time.Second, "grace %v leaves the application little time before the sidecar's %v drain", grace, drain)

				origin := r.Deployments[originName].Spec.Template.Spec
				originDrain, err := time.ParseDuration(flagValue(t, origin.Containers[0].Args, "drain-timeout"))
				require.NoError(t, err)
				require.NotNil(t, origin.TerminationGracePeriodSeconds)
				assert.Greater(t, time.Duration(*origin.TerminationGracePeriodSeconds)*time.Second, originDrain)
			})

			t.Run("origin", func(t *testing.T) { checkOrigin(t, r) })

			t.Run("network policy", func(t *testing.T) {
				np, ok := r.NetworkPolicies[appName]
				require.True(t, ok)
				sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
				require.NoError(t, err)
				assert.True(t, sel.Matches(labels.Set(app.Spec.Template.Labels)), "the policy selects the application's pods")
				named := containerPorts(sc.c)
				for k, v := range containerPorts(&app.Spec.Template.Spec.Containers[0]) {
					named[k] = v
				}
				for _, rule := range np.Spec.Ingress {
					for _, p := range rule.Ports {
						require.NotNil(t, p.Port)
						port := p.Port.IntVal
						if p.Port.StrVal != "" {
							var ok bool
							port, ok = named[p.Port.StrVal]
							assert.True(t, ok, "policy port %q is no container port", p.Port.StrVal)
						}
						assert.NotEqual(t, named["la-grpc"], port, "the sidecar's gRPC port must stay closed to other pods")
					}
				}
			})

			t.Run("images", func(t *testing.T) {
				for name, d := range r.Deployments {
					pod := d.Spec.Template.Spec
					for _, c := range append(append([]corev1.Container{}, pod.InitContainers...), pod.Containers...) {
						if o.name != "base" {
							assert.Regexp(t, `^(localhost|registry\.invalid)/lookahead/(sidecar|origin|example-app)[:@]`, c.Image,
								"%s/%s: one of the images make images builds (IMAGE_REPO/{sidecar,origin,example-app})", name, c.Name)
						}
						if !o.pinnedImages {
							continue
						}
						assert.Regexp(t, `(:[\w][\w.-]*|@sha256:[0-9a-f]{64})$`, c.Image, "%s/%s: pin a tag or digest", name, c.Name)
						assert.NotRegexp(t, `:latest$`, c.Image, "%s/%s", name, c.Name)
					}
				}
			})

			t.Run("monitoring", func(t *testing.T) {
				if !o.monitoring {
					assert.Empty(t, r.PodMonitors)
					assert.Empty(t, r.PrometheusRules)
					return
				}
				checkPodMonitor(t, r, "lookahead-sidecar", app.Spec.Template.Labels, containerPorts(sc.c))
				origin := r.Deployments[originName].Spec.Template
				checkPodMonitor(t, r, "lookahead-origin", origin.Labels, containerPorts(&origin.Spec.Containers[0]))
				checkRenderedRules(t, r)
				checkRenderedDashboard(t, r)
			})
		})
	}
}

// checkSidecarConfig runs the sidecar with --check-config in the container's
// environment (its ConfigMap and env, nothing else) and returns the settings
// it prints: it exits 0 only when every variable names a setting and every
// value is valid.
func checkSidecarConfig(t *testing.T, bin string, sc *sidecarConfig) []string {
	t.Helper()
	cmd := exec.Command(bin, "--check-config")
	cmd.Env = []string{}
	for k, v := range sc.config {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	for k, v := range envOf(*sc.c) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.Output()
	var stderr []byte
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = ee.Stderr
	}
	require.NoError(t, err, "sidecar refuses its rendered environment %q: %s", cmd.Env, stderr)
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// assertFlagsParse runs bin with args and then -h: flag parsing stops at
// the first unknown flag or bad value with exit status 2, and reaches -h
// (exit 0) only when every flag exists and every value parses.
func assertFlagsParse(t *testing.T, bin string, args []string) {
	t.Helper()
	out, err := exec.Command(bin, append(append([]string{}, args...), "-h")...).CombinedOutput()
	if err != nil {
		lines := strings.SplitN(string(out), "\n", 2)
		t.Errorf("%s rejects its rendered args %q: %v: %s", filepath.Base(bin), args, err, lines[0])
	}
}

// listenPort returns the port of a listen address and checks the host is
// the wildcard when reachable (probes and Prometheus dial the pod IP).
func listenPort(t *testing.T, addr string, wildcard bool) int32 {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err, "listen address %q", addr)
	if wildcard {
		assert.Contains(t, []string{"", "0.0.0.0", "::"}, host, "%q: kubelet probes and scrapes dial the pod IP, not loopback", addr)
	}
	p, err := strconv.ParseInt(port, 10, 32)
	require.NoError(t, err)
	return int32(p)
}

func containerPorts(c *corev1.Container) map[string]int32 {
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	return ports
}

func envOf(c corev1.Container) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	return env
}

// flagValue returns the value of --name=value in args; the last one when
// repeated, as Go's flag package does (overlays append overrides).
func flagValue(t *testing.T, args []string, name string) string {
	t.Helper()
	for i := len(args) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(args[i], "--"+name+"="); ok {
			return v
		}
	}
	t.Fatalf("no --%s in %q", name, args)
	return ""
}

// parseBytes reads the sidecar's byte sizes (256MiB, 1GiB, 4096) and
// GOMEMLIMIT's (the same binary suffixes).
func parseBytes(t *testing.T, s string) int64 {
	t.Helper()
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = v, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err, "size %q", s)
	return n * mult
}

// checkSecurity asserts the restricted pod security standard, reading each
// setting from the container or, where Kubernetes allows, from the pod.
func checkSecurity(t *testing.T, who string, pod *corev1.PodSecurityContext, c *corev1.SecurityContext) {
	t.Helper()
	if !assert.NotNil(t, c, "%s: no securityContext", who) {
		return
	}
	if pod == nil {
		pod = &corev1.PodSecurityContext{}
	}
	nonRoot := c.RunAsNonRoot
	if nonRoot == nil {
		nonRoot = pod.RunAsNonRoot
	}
	assert.True(t, nonRoot != nil && *nonRoot, "%s: runAsNonRoot", who)
	user := c.RunAsUser
	if user == nil {
		user = pod.RunAsUser
	}
	assert.True(t, user != nil && *user > 0, "%s: runAsUser must be a numeric non-root uid, or the kubelet cannot verify runAsNonRoot for a named USER", who)
	assert.True(t, c.ReadOnlyRootFilesystem != nil && *c.ReadOnlyRootFilesystem, "%s: readOnlyRootFilesystem", who)
	assert.True(t, c.AllowPrivilegeEscalation != nil && !*c.AllowPrivilegeEscalation, "%s: allowPrivilegeEscalation false", who)
	if assert.NotNil(t, c.Capabilities, "%s: capabilities", who) {
		assert.Equal(t, []corev1.Capability{"ALL"}, c.Capabilities.Drop, "%s: drop ALL", who)
		assert.Empty(t, c.Capabilities.Add, "%s: adds capabilities", who)
	}
	assert.Nil(t, c.Privileged, "%s: privileged", who)
	seccomp := c.SeccompProfile
	if seccomp == nil {
		seccomp = pod.SeccompProfile
	}
	assert.True(t, seccomp != nil && seccomp.Type == corev1.SeccompProfileTypeRuntimeDefault, "%s: seccompProfile RuntimeDefault", who)
}

// checkOrigin asserts the origin writes only to its volume and has one
// writer at a time.
func checkOrigin(t *testing.T, r *rendered) {
	t.Helper()
	d, ok := r.Deployments[originName]
	require.True(t, ok)
	require.NotNil(t, d.Spec.Replicas)
	assert.Equal(t, int32(1), *d.Spec.Replicas, "bbolt has one writer")
	assert.Equal(t, "Recreate", string(d.Spec.Strategy.Type), "a rolling update would wait on the store's lock and the RWO volume")
	pod := d.Spec.Template.Spec
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	dataDir := flagValue(t, c.Args, "data")
	require.Len(t, c.VolumeMounts, 1, "the data volume is the only writable path")
	assert.Equal(t, dataDir, c.VolumeMounts[0].MountPath)
	assert.False(t, c.VolumeMounts[0].ReadOnly)
	var claim string
	for _, v := range pod.Volumes {
		if v.Name == c.VolumeMounts[0].Name && v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
	}
	require.NotEmpty(t, claim, "the data volume is a PersistentVolumeClaim")
	pvc, ok := r.PVCs[claim]
	require.True(t, ok, "PVC %s not rendered", claim)
	assert.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, pvc.Spec.AccessModes)
	require.NotNil(t, pod.SecurityContext)
	assert.NotNil(t, pod.SecurityContext.FSGroup, "fsGroup makes the volume writable for the non-root user")

	port := listenPort(t, flagValue(t, c.Args, "listen"), true)
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if assert.NotNil(t, p, name) && assert.NotNil(t, p.GRPC, name) {
			assert.Equal(t, port, p.GRPC.Port, name)
		}
	}
	svc, ok := r.Services[originName]
	require.True(t, ok)
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	assert.True(t, sel.Matches(labels.Set(d.Spec.Template.Labels)), "the Service selects the origin")
	for _, sp := range svc.Spec.Ports {
		assert.Contains(t, containerPorts(&c), sp.TargetPort.StrVal, "Service port %s targets no container port", sp.Name)
	}
}

func TestSizingRuleExamples(t *testing.T) {
	// The README's table, computed: limit = (cache + prefetch) × 1.5 + 64Mi.
	for _, tc := range []struct {
		cache, prefetch string
		limit           string
	}{
		{"256MiB", "64MiB", "544Mi"},
		{"64MiB", "16MiB", "184Mi"},
		{"1GiB", "256MiB", "1984Mi"},
	} {
		t.Run(tc.cache+"+"+tc.prefetch, func(t *testing.T) {
			budget := parseBytes(t, tc.cache) + parseBytes(t, tc.prefetch)
			got := int64(float64(budget)*sizingFactor) + sizingBaseline
			want := resource.MustParse(tc.limit)
			assert.Equal(t, want.Value(), got)
		})
	}
}

func TestComponentAddsSidecarToAnyDeployment(t *testing.T) {
	dir := t.TempDir()
	component, err := filepath.Abs("components/sidecar")
	require.NoError(t, err)
	rel, err := filepath.Rel(dir, component)
	require.NoError(t, err)
	files := map[string]string{
		"kustomization.yaml": fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [deployments.yaml]
components: [%s]
`, rel),
		"deployments.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop
  labels: {lookahead.dev/sidecar: enabled}
spec:
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec:
      initContainers:
      - {name: migrate, image: shop-migrate}
      containers:
      - {name: web, image: shop, ports: [{name: http, containerPort: 8080}]}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: batch
spec:
  selector: {matchLabels: {app: batch}}
  template:
    metadata: {labels: {app: batch}}
    spec:
      containers:
      - {name: worker, image: batch}
`,
	}
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	r := render(t, dir)

	sc := sidecarOf(t, r, "shop")
	require.NotNil(t, sc.c.RestartPolicy)
	assert.Equal(t, corev1.ContainerRestartPolicyAlways, *sc.c.RestartPolicy)
	// The patch's entry comes first, so the application's own init
	// containers run with the cache up (each waits for the sidecar's
	// startupProbe).
	assert.Equal(t, []string{sidecarName, "migrate"}, names(sc.pod.InitContainers), "existing init containers are kept, after the sidecar")
	assert.Equal(t, []string{"web"}, names(sc.pod.Containers), "the application's containers are untouched")
	assert.Equal(t, map[string]string{"app": "shop"}, r.Deployments["shop"].Spec.Selector.MatchLabels, "the selector is untouched: it is immutable")
	assert.Equal(t, "enabled", sc.meta.Labels[sidecarLabel])
	for _, p := range []*corev1.Probe{sc.c.StartupProbe, sc.c.ReadinessProbe, sc.c.LivenessProbe} {
		require.NotNil(t, p)
		assert.NotNil(t, p.GRPC)
	}
	assert.Contains(t, sc.c.Resources.Limits, corev1.ResourceMemory)
	assert.Contains(t, envOf(*sc.c), "GOMEMLIMIT")
	require.NotNil(t, sc.pod.TerminationGracePeriodSeconds)
	checkSidecarConfig(t, filepath.Join(binaries(t), "sidecar"), sc)

	batch := r.Deployments["batch"].Spec.Template.Spec
	assert.Empty(t, batch.InitContainers, "a Deployment without the label gets no sidecar")
	assert.Nil(t, batch.TerminationGracePeriodSeconds)
}

func names(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// TestDevImagesAreWhatMakeImagesBuilds ties the dev overlay's image names to
// the Makefile's IMAGE_REPO and IMAGE_TAG defaults, which name the tarballs.
func TestDevImagesAreWhatMakeImagesBuilds(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	require.NoError(t, err)
	repo := regexp.MustCompile(`(?m)^IMAGE_REPO\s*\?=\s*(\S+)$`).FindSubmatch(mk)
	tag := regexp.MustCompile(`(?m)^IMAGE_TAG\s*\?=\s*(\S+)$`).FindSubmatch(mk)
	require.NotNil(t, repo, "IMAGE_REPO ?= in the Makefile")
	require.NotNil(t, tag, "IMAGE_TAG ?= in the Makefile")
	kust, err := os.ReadFile("overlays/dev/kustomization.yaml")
	require.NoError(t, err)
	for _, image := range []string{"sidecar", "origin", "example-app"} {
		assert.Contains(t, string(kust), "newName: "+string(repo[1])+"/"+image+"\n  newTag: "+string(tag[1])+"\n")
	}
}
