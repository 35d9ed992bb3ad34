package deploytest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"trending/internal/itest"
)

// promtool finds promtool. Under `make test` (which exports the integration variables and
// installs it with infra/local/testdeps.sh) a missing promtool fails the test; elsewhere it
// skips, saying how to install it.
func promtool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	if os.Getenv(itest.EnvKafka) != "" {
		t.Fatalf("promtool is not installed, and %s is set (make test): run infra/local/testdeps.sh (apt-get install prometheus)", itest.EnvKafka)
	}
	t.Skip("promtool not found: apt-get install prometheus (infra/local/testdeps.sh), or run make test")
	return ""
}

// TestPrometheusFiles runs promtool on the alert rules, their unit tests (alerts_test.yaml:
// each alert fires on series that break it and stays silent on a healthy deployment's) and
// the compose stack's scrape configuration (which loads the rules).
func TestPrometheusFiles(t *testing.T) {
	tool := promtool(t)
	dir := filepath.Join(root(t), "infra", "prometheus")
	for _, args := range [][]string{{"check", "rules", "alerts.yaml"}, {"check", "config", "prometheus.yml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(tool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// metricName is how a metric of ours is spelled in a query.
var metricName = regexp.MustCompile(`\btrending_[a-z0-9_]+`)

// referencedMetrics returns every metric name the Grafana dashboard and the alert rules
// query, each with where it is used.
func referencedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	refs := map[string][]string{}
	add := func(where, expr string) {
		for _, n := range metricName.FindAllString(expr, -1) {
			if !slices.Contains(refs[n], where) {
				refs[n] = append(refs[n], where)
			}
		}
	}
	raw, err := os.ReadFile(filepath.Join(root(t), "infra", "grafana", "trending.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("trending.json: %v", err)
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			add("dashboard panel "+p.Title, tg.Expr)
		}
	}
	raw, err = os.ReadFile(filepath.Join(root(t), "infra", "prometheus", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			add("alert "+r.Alert, r.Expr)
			n++
		}
	}
	if len(dash.Panels) == 0 || n == 0 || len(refs) == 0 {
		t.Fatalf("%d panels, %d rules, %d metrics: the files did not parse as expected", len(dash.Panels), n, len(refs))
	}
	return refs
}

// TestEveryAlertUnitTested: alerts_test.yaml makes every alert of alerts.yaml fire at least
// once and checks it silent at least once, so a new rule comes with its test.
func TestEveryAlertUnitTested(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root(t), "infra", "prometheus", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatal(err)
	}
	raw, err = os.ReadFile(filepath.Join(root(t), "infra", "prometheus", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(raw, &tests); err != nil {
		t.Fatal(err)
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			if !fires[r.Alert] || !silent[r.Alert] {
				t.Errorf("alert %s: alerts_test.yaml fires it: %v, checks it silent: %v; want both", r.Alert, fires[r.Alert], silent[r.Alert])
			}
		}
	}
	if n == 0 {
		t.Fatal("no alert rules parsed")
	}
}

// TestDocumentedAlerts: every alert has a runbook section in docs/operations.md, and its
// runbook annotation points at it.
func TestDocumentedAlerts(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root(t), "infra", "prometheus", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root(t), "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for _, l := range strings.Split(string(doc), "\n") {
		if h, ok := strings.CutPrefix(l, "### "); ok {
			headings[strings.ToLower(strings.TrimSpace(h))] = true
		}
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			rb := r.Annotations["runbook"]
			anchor, ok := strings.CutPrefix(rb, "docs/operations.md#")
			if !ok || !headings[anchor] {
				t.Errorf("alert %s: runbook %q: want docs/operations.md#<a ### heading of docs/operations.md>", r.Alert, rb)
			}
		}
	}
}

// TestScrapeTargets: the Kubernetes pod templates of the long-running roles carry the
// prometheus.io annotations at their metrics port, and the compose stack's Prometheus scrapes
// the ports the compose services serve metrics on.
func TestScrapeTargets(t *testing.T) {
	for _, o := range loadManifests(t) {
		if o.kind() != "Deployment" {
			continue
		}
		ann, _ := get(o.doc, "spec", "template", "metadata", "annotations").(map[string]any)
		port := fmt.Sprint(ann["prometheus.io/port"])
		if fmt.Sprint(ann["prometheus.io/scrape"]) != "true" || fmt.Sprint(ann["prometheus.io/path"]) != "/metrics" {
			t.Errorf("Deployment %s: pod annotations %v: want prometheus.io/scrape \"true\", prometheus.io/path /metrics", o.name(), ann)
		}
		var ports []string
		for _, c := range asList(podSpec(o)["containers"]) {
			for _, p := range asList(get(c, "ports")) {
				ports = append(ports, fmt.Sprint(get(p, "containerPort")))
			}
		}
		if !slices.Contains(ports, port) {
			t.Errorf("Deployment %s: prometheus.io/port %q is none of its container ports %v", o.name(), port, ports)
		}
	}

	raw, err := os.ReadFile(filepath.Join(root(t), "infra", "prometheus", "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var prom struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			DNS []struct {
				Names []string `yaml:"names"`
				Port  int      `yaml:"port"`
			} `yaml:"dns_sd_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(raw, &prom); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(prom.RuleFiles, "alerts.yaml") {
		t.Errorf("prometheus.yml rule_files %v: want alerts.yaml", prom.RuleFiles)
	}
	scraped := map[string]string{} // compose service -> port
	for _, sc := range prom.ScrapeConfigs {
		for _, d := range sc.DNS {
			for _, n := range d.Names {
				scraped[n] = fmt.Sprint(d.Port)
			}
		}
	}
	c := loadCompose(t)
	if _, ok := c.Services["prometheus"]; !ok {
		t.Error("compose: no prometheus service")
	}
	for name, s := range c.Services {
		addr := fmt.Sprint(s.Environment["TRENDING_METRICS_ADDR"])
		if name == "api" {
			addr = fmt.Sprint(s.Environment["TRENDING_LISTEN"])
		}
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			continue // not a long-running role with metrics
		}
		if scraped[name] != port {
			t.Errorf("compose service %s serves metrics on %s; prometheus.yml scrapes it on %q", name, port, scraped[name])
		}
	}
}

// exportedSamples reads a /metrics page: every sample name, and the names of histograms.
func exportedSamples(body []byte) (samples map[string]bool) {
	samples = map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if i := strings.IndexAny(l, "{ "); i > 0 {
			samples[l[:i]] = true
		}
	}
	return samples
}

// TestDashboardAndAlertMetricsExported starts `trending up` (the binary, on its embedded
// broker and S3, its own load generator replaying the recent past) and waits until every
// metric the dashboard and the alert rules query is on its /metrics page: a series that
// exists, so a histogram counts by its _bucket, _sum and _count samples. Several exist only
// after traffic: the speed and archive lag gauges, watermarks and checkpoint times (the
// first publish tick and checkpoint of a partition), the merger's stale-partition gauge (the
// first merge), the freshness histogram (the first live version), the request histogram
// (the requests this test makes), the list ages (the first lists), and the reconciliation
// gauges (the first closed hour made exact; --hour-mode sketch, so the hour lists state an
// error bound and error_over_bound exists). The DLQ, quarantine and batch series are
// registered with their label values at start, as are the API's cache refresh kinds.
func TestDashboardAndAlertMetricsExported(t *testing.T) {
	if testing.Short() {
		t.Skip("runs trending up until a closed hour is exact")
	}
	refs := referencedMetrics(t)
	bin := trendingBinary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "up", "--data", filepath.Join(t.TempDir(), "data"), "--listen", addr,
		"--backfill", "2h", "--speedup", "1200", "--hour-mode", "sketch",
		"--publish-every", "300ms", "--checkpoint-every", "2s", "--archive-roll", "1s", "--batch-every", "1s",
		"--batch-lateness", "1m", "--log-format", "json", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("trending up: %v", err)
		}
		if t.Failed() {
			t.Logf("trending up output:\n%s", out.String())
		}
	}()
	get := func(path string) ([]byte, error) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return io.ReadAll(resp.Body)
	}
	var missing []string
	start := time.Now()
	deadline := start.Add(4 * time.Minute)
	for time.Now().Before(deadline) {
		time.Sleep(time.Second)
		_, _ = get("/v1/trending?window=hour") // a request for the latency histogram
		body, err := get("/metrics")
		if err != nil {
			continue
		}
		samples := exportedSamples(body)
		missing = missing[:0]
		for n := range refs {
			if !samples[n] {
				missing = append(missing, n)
			}
		}
		if len(missing) == 0 {
			t.Logf("all %d metrics exported after %s", len(refs), time.Since(start).Round(time.Second))
			return
		}
	}
	slices.Sort(missing)
	for _, n := range missing {
		t.Errorf("%s (used by %s) is not on trending up's /metrics", n, strings.Join(refs[n], ", "))
	}
}
