package k8s_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "regenerate ../prometheus/prometheusrule.yaml from ../prometheus/lookahead.rules.yml")

const (
	rulesFile          = "../prometheus/lookahead.rules.yml"
	runbookFile        = "../../docs/runbook.md"
	rulesTestFile      = "lookahead.rules.test.yml" // in ../prometheus
	prometheusRuleFile = "../prometheus/prometheusrule.yaml"
	dashboardFile      = "../grafana/lookahead.json"
	dashboardConfigMap = "lookahead-grafana-dashboard"
)

// sourceRuleGroups reads the plain rule file strictly into the operator's
// types: a field the PrometheusRule CRD does not have fails here.
func sourceRuleGroups(t *testing.T) []monitoringv1.RuleGroup {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	require.NoError(t, err)
	var f struct {
		Groups []monitoringv1.RuleGroup `json:"groups"`
	}
	require.NoError(t, yaml.UnmarshalStrict(b, &f), rulesFile)
	require.NotEmpty(t, f.Groups)
	return f.Groups
}

// TestPrometheusRuleInSync keeps the PrometheusRule a pure function of the
// plain rule file, which is the one to edit (-update regenerates).
func TestPrometheusRuleInSync(t *testing.T) {
	body, err := yaml.Marshal(map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "PrometheusRule",
		"metadata":   map[string]any{"name": "lookahead"},
		"spec":       map[string]any{"groups": sourceRuleGroups(t)},
	})
	require.NoError(t, err)
	want := "# Code generated from lookahead.rules.yml by\n" +
		"#   go test ./deploy/k8s -run TestPrometheusRuleInSync -update\n" +
		"# DO NOT EDIT.\n" + string(body)
	if *update {
		require.NoError(t, os.WriteFile(prometheusRuleFile, []byte(want), 0o644))
		return
	}
	got, err := os.ReadFile(prometheusRuleFile)
	require.NoError(t, err)
	assert.Equal(t, want, string(got), "%s is stale: run go test ./deploy/k8s -run TestPrometheusRuleInSync -update", prometheusRuleFile)
}

// TestRunbook: every alert has a section in the runbook, titled with its
// name (the anchor its runbook_url links), and every section is an alert's.
func TestRunbook(t *testing.T) {
	b, err := os.ReadFile(runbookFile)
	require.NoError(t, err)
	var sections []string
	for _, l := range strings.Split(string(b), "\n") {
		if title, ok := strings.CutPrefix(l, "## "); ok {
			sections = append(sections, strings.TrimSpace(title))
		}
	}
	var alerts []string
	for _, g := range sourceRuleGroups(t) {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts = append(alerts, r.Alert)
			}
		}
	}
	require.NotEmpty(t, alerts)
	for _, a := range alerts {
		assert.Contains(t, sections, a, "alert %s has no section in %s", a, runbookFile)
	}
	for _, s := range sections {
		assert.Contains(t, alerts, s, "%s has a section %q that is no alert", runbookFile, s)
	}
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	assert.Contains(t, string(readme), "(docs/runbook.md)", "the README links the runbook")
}

func TestRuleFile(t *testing.T) {
	groups := sourceRuleGroups(t)
	recorded := map[string]bool{}
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recorded[r.Record] = true
			}
		}
	}
	known := knownMetrics(t)
	for _, g := range groups {
		for _, r := range g.Rules {
			name := r.Record + r.Alert
			t.Run(name, func(t *testing.T) {
				require.True(t, (r.Record == "") != (r.Alert == ""), "a rule records or alerts")
				series, rec := lookaheadNames(r.Expr.String())
				assert.NotEmpty(t, append(series, rec...), "the expression reads no lookahead series")
				for _, s := range series {
					assert.True(t, known[s], "%s is not in lookahead's metric set (internal/metrics)", s)
				}
				for _, s := range rec {
					assert.True(t, recorded[s], "%s is recorded by no rule in %s", s, rulesFile)
				}
				if r.Alert != "" {
					assert.Regexp(t, `^Lookahead[A-Z]\w+$`, r.Alert)
					assert.Contains(t, []string{"critical", "warning", "info"}, r.Labels["severity"])
					assert.NotEmpty(t, r.Annotations["summary"])
					assert.NotEmpty(t, r.Annotations["description"])
					assert.Equal(t, "docs/runbook.md#"+strings.ToLower(r.Alert), r.Annotations["runbook_url"],
						"runbook_url: the alert's section of the runbook, relative to the repository root")
					require.NotNil(t, r.For, "an alert without for: pages on one bad evaluation")
				}
			})
		}
	}
	t.Run("promtool check rules", func(t *testing.T) { runPromtool(t, "", "check", "rules", rulesFile) })
	t.Run("promtool test rules", func(t *testing.T) {
		out := runPromtool(t, filepath.Dir(rulesFile), "test", "rules", rulesTestFile)
		assert.Contains(t, out, "SUCCESS")
	})
	t.Run("every alert has a unit test", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(rulesFile), rulesTestFile))
		require.NoError(t, err)
		for _, g := range groups {
			for _, r := range g.Rules {
				if r.Alert != "" {
					assert.Regexp(t, regexp.MustCompile(`alertname: `+r.Alert+`\b`), string(b), "no promtool test for %s", r.Alert)
				}
			}
		}
	})
}

// checkRenderedRules checks the PrometheusRule an overlay renders: the
// source groups, unchanged, and valid for promtool.
func checkRenderedRules(t *testing.T, r *rendered) {
	t.Helper()
	pr, ok := r.PrometheusRules["lookahead"]
	require.True(t, ok, "PrometheusRule lookahead not rendered")
	assert.Equal(t, sourceRuleGroups(t), pr.Spec.Groups)
	b, err := yaml.Marshal(map[string]any{"groups": pr.Spec.Groups})
	require.NoError(t, err)
	f := filepath.Join(t.TempDir(), "rendered.rules.yml")
	require.NoError(t, os.WriteFile(f, b, 0o644))
	runPromtool(t, "", "check", "rules", f)
}

// checkPodMonitor asserts the PodMonitor selects the pods (in its own
// namespace) and scrapes a port they have.
func checkPodMonitor(t *testing.T, r *rendered, name string, podLabels map[string]string, ports map[string]int32) {
	t.Helper()
	pm, ok := r.PodMonitors[name]
	require.True(t, ok, "PodMonitor %s not rendered", name)
	sel, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector)
	require.NoError(t, err)
	assert.False(t, sel.Empty(), "%s selects every pod", name)
	assert.True(t, sel.Matches(labels.Set(podLabels)), "%s does not select %v", name, podLabels)
	assert.False(t, pm.Spec.NamespaceSelector.Any)
	assert.Empty(t, pm.Spec.NamespaceSelector.MatchNames, "%s watches its own namespace", name)
	assert.Contains(t, podLabels, pm.Spec.JobLabel, "%s: jobLabel names a label the pods lack", name)
	require.NotEmpty(t, pm.Spec.PodMetricsEndpoints)
	for _, ep := range pm.Spec.PodMetricsEndpoints {
		require.NotNil(t, ep.Port, "%s: scrape a named port", name)
		assert.Contains(t, ports, *ep.Port, "%s: port %q is not a container port", name, *ep.Port)
		assert.Equal(t, "/metrics", ep.Path)
	}
}

func checkRenderedDashboard(t *testing.T, r *rendered) {
	t.Helper()
	cm, ok := r.ConfigMaps[dashboardConfigMap]
	require.True(t, ok, "dashboard ConfigMap not rendered")
	assert.Equal(t, "1", cm.Labels["grafana_dashboard"], "Grafana's sidecar finds dashboards by this label")
	want, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	assert.Equal(t, string(want), cm.Data["lookahead.json"])
}

// dashboard is the part of Grafana's dashboard model these checks read.
type dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int    `json:"id"`
		Type       string `json:"type"`
		Title      string `json:"title"`
		Datasource struct {
			Type string `json:"type"`
			UID  string `json:"uid"`
		} `json:"datasource"`
		GridPos struct{ X, Y, W, H int } `json:"gridPos"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// dashboardQueries returns the dashboard's PromQL by "panel/refId", with
// Grafana's variables replaced so Prometheus can run them as they are.
func dashboardQueries(t *testing.T, d *dashboard) map[string]string {
	t.Helper()
	vars := map[string]string{"$__rate_interval": "1m", "$__interval": "15s", "$__range": "1h"}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			vars["$"+v.Name] = ".+"
		}
	}
	ref := regexp.MustCompile(`\$\{?\w+\}?`)
	out := map[string]string{}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			q := ref.ReplaceAllStringFunc(tg.Expr, func(s string) string {
				v, ok := vars[strings.Trim(s, "{}")]
				assert.True(t, ok, "panel %q uses %s, which the dashboard does not define", p.Title, s)
				return v
			})
			out[fmt.Sprintf("panel_%d_%s", p.ID, tg.RefID)] = q
		}
	}
	return out
}

func TestDashboard(t *testing.T) {
	b, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(b, &d))
	assert.Equal(t, "lookahead", d.UID)
	require.NotEmpty(t, d.Panels)

	ids := map[int]bool{}
	cells := map[[2]int]string{} // grid cell → panel title
	for _, p := range d.Panels {
		assert.False(t, ids[p.ID], "panel id %d twice", p.ID)
		ids[p.ID] = true
		assert.Equal(t, "${datasource}", p.Datasource.UID, "panel %q: use the datasource variable", p.Title)
		assert.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		assert.LessOrEqual(t, p.GridPos.X+p.GridPos.W, 24, "panel %q is wider than the grid", p.Title)
		for x := p.GridPos.X; x < p.GridPos.X+p.GridPos.W; x++ {
			for y := p.GridPos.Y; y < p.GridPos.Y+p.GridPos.H; y++ {
				if other, ok := cells[[2]int{x, y}]; ok {
					t.Errorf("panels %q and %q overlap", other, p.Title)
				}
				cells[[2]int{x, y}] = p.Title
			}
		}
	}

	// What the dashboard must show, by the series it reads.
	all := ""
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			all += tg.Expr + "\n"
		}
	}
	for _, s := range []string{
		"lookahead_cache_hits_total", "lookahead_cache_misses_total", "lookahead_origin_round_trips_total",
		"lookahead_prefetch_used_total", "lookahead_prefetch_issued_total", "lookahead_origin_round_trip_duration_seconds_bucket",
		"grpc_server_handling_seconds_bucket", "grpc_server_handled_total",
	} {
		assert.Contains(t, all, s)
	}

	known := knownMetrics(t)
	queries := dashboardQueries(t, &d)
	for name, q := range queries {
		for _, tok := range promqlName.FindAllString(regexp.MustCompile(`"[^"]*"`).ReplaceAllString(q, `""`), -1) {
			if strings.HasPrefix(tok, "lookahead_") || strings.HasPrefix(tok, "grpc_server_") || strings.HasPrefix(tok, "process_") || strings.HasPrefix(tok, "go_") {
				assert.True(t, known[tok], "%s reads %s, which the sidecar does not export", name, tok)
			}
		}
	}
	t.Run("promtool parses every query", func(t *testing.T) { checkPromQL(t, queries) })
}
