package prometheus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/lookahead-dev/lookahead"
	"github.com/lookahead-dev/lookahead/internal/scrape"
)

const hitRatio = `sum(lookahead_cache_hits_total) / (sum(lookahead_cache_hits_total) + sum(lookahead_cache_misses_total))`

// walk visits a task tree object by object, one Get each, breadth-first,
// as db4o's activation does, and returns how many objects it read.
func walk(c *lookahead.Client, root string) int {
	n := 0
	queue := []string{root}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		obj, _, err := c.Get(context.Background(), id, nil)
		Expect(err).NotTo(HaveOccurred(), "Get %s", id)
		n++
		for _, r := range obj.GetRefs() {
			queue = append(queue, r.GetId())
		}
	}
	return n
}

// Ordered: the traffic runs once, in BeforeAll; ContinueOnFailure: each
// check below still reports when another fails.
var _ = Describe("lookahead's metrics in Prometheus", Ordered, ContinueOnFailure, func() {
	var own scrape.Samples // the sidecar's /metrics once traffic has stopped

	BeforeAll(func() {
		c, err := lookahead.Dial(sidecar.GRPC)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(c.Close)

		// rate() needs a sample from before the increase: make the
		// round-trip series exist and wait until Prometheus has it.
		Expect(walk(c, "task-0")).To(Equal(781))
		Eventually(prom.Query).WithArguments(`lookahead_origin_round_trips_total{job="` + scrapeJob + `"}`).ShouldNot(BeEmpty())

		// Three more trees, each walked twice: the first pass mostly from
		// prefetched objects, the second entirely from the cache.
		for pass := 0; pass < 2; pass++ {
			for root := 1; root <= 3; root++ {
				Expect(walk(c, fmt.Sprintf("task-%d", root))).To(Equal(781))
			}
		}
		own, err = scrape.Fetch(context.Background(), sidecar.MetricsURL())
		Expect(err).NotTo(HaveOccurred())
	})

	It("scrapes the sidecar", func() {
		Expect(prom.Scalar(`up{job="` + scrapeJob + `"}`)).To(Equal(1.0))
	})

	It("shows the hit ratio the sidecar reports, above 0.4", func() {
		hits, misses := own.Sum("lookahead_cache_hits_total"), own.Sum("lookahead_cache_misses_total")
		Expect(hits+misses).To(BeNumerically(">=", 7*781), "every Get is a hit or a miss")
		want := hits / (hits + misses)
		AddReportEntry("sidecar hits, misses, hit ratio", fmt.Sprintf("%.0f, %.0f, %.3f", hits, misses, want))
		Expect(want).To(BeNumerically(">", 0.4))
		// Counters stand still without requests: the next scrape converges.
		Eventually(prom.Scalar).WithArguments(hitRatio).Should(BeNumerically("~", want, 1e-9))
	})

	It("shows a positive origin round-trip rate", func() {
		Expect(own.Sum("lookahead_origin_round_trips_total")).To(BeNumerically(">", 0))
		Eventually(prom.Scalar).WithArguments(`sum(rate(lookahead_origin_round_trips_total[1m]))`).Should(BeNumerically(">", 0))
	})

	It("loads lookahead's rules and evaluates each without error", func() {
		b, err := os.ReadFile(rulesFile)
		Expect(err).NotTo(HaveOccurred())
		var file struct {
			Groups []struct {
				Rules []map[string]any `json:"rules"`
			} `json:"groups"`
		}
		Expect(yaml.Unmarshal(b, &file)).To(Succeed())
		n := 0
		for _, g := range file.Groups {
			n += len(g.Rules)
		}
		Expect(n).To(BeNumerically(">", 0))
		Eventually(func(g Gomega) {
			rules, err := prom.Rules()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(rules).To(HaveLen(n))
			for _, r := range rules {
				g.Expect(r.Health).To(Equal("ok"), "rule %s: %s", r.Name, r.LastError)
			}
		}).Should(Succeed())
		// Evaluated on real series, the recording rules produce the ratio.
		Eventually(prom.Scalar).WithArguments(`namespace_job:lookahead_cache_hit_ratio:rate5m{job="` + scrapeJob + `"}`).
			Should(BeNumerically(">", 0.4))
		Eventually(prom.Scalar).WithArguments(`namespace_job:lookahead_prefetch_accuracy:rate5m{job="` + scrapeJob + `"}`).
			Should(And(BeNumerically(">", 0), BeNumerically("<=", 1)))
	})

	It("answers every query of the Grafana dashboard", func() {
		queries := dashboardQueries()
		Expect(queries).NotTo(BeEmpty())
		for title, qs := range queries {
			for _, q := range qs {
				_, err := prom.Query(q)
				Expect(err).NotTo(HaveOccurred(), "panel %q", title)
			}
		}
		// The headline panels have data.
		for _, title := range []string{"Hit ratio", "Prefetch accuracy", "Origin round trips", "Hits and misses", "Origin round-trip latency", "Cache size"} {
			Expect(queries).To(HaveKey(title))
			Eventually(prom.Query).WithArguments(queries[title][0]).ShouldNot(BeEmpty(), "panel %q", title)
		}
	})

	It("exposes metrics that promtool check metrics accepts", func() {
		promtool, err := exec.LookPath("promtool")
		if err != nil {
			Skip("promtool is not on PATH")
		}
		resp, err := httpGet(sidecar.MetricsURL())
		Expect(err).NotTo(HaveOccurred())
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(resp)
		out, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "promtool check metrics:\n%s", out)
	})
})

// dashboardQueries returns the dashboard's PromQL by panel title, with
// Grafana's variables replaced by values Prometheus accepts as they are.
func dashboardQueries() map[string][]string {
	b, err := os.ReadFile(dashboardFile)
	Expect(err).NotTo(HaveOccurred())
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	Expect(json.Unmarshal(b, &d)).To(Succeed())
	vars := strings.NewReplacer("$__rate_interval", "1m", "$job", scrapeJob, "$instance", ".+")
	out := map[string][]string{}
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			q := vars.Replace(t.Expr)
			Expect(q).NotTo(MatchRegexp(`\$\w`), "panel %q: a variable this suite does not set", p.Title)
			out[p.Title] = append(out[p.Title], q)
		}
	}
	return out
}

func httpGet(u string) (string, error) {
	resp, err := http.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", u, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
