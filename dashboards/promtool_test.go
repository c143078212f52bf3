package dashboards_test

// Unit tests of every alert with `promtool test rules`: for each alert,
// input series that make it fire (checked one evaluation before its
// `for:` ends, when it must not fire yet, and when it ends) and series
// that must not make it fire.

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/xdslens/xdslens/dashboards"
)

// scope are the OpenTelemetry scope labels every exported series has.
const scope = `otel_scope_name="github.com/xdslens/xdslens/telemetry", otel_scope_version="v0.1.0"`

// pod are the labels of one scraped process and its client.
const pod = `job="xds", instance="pod-1:9464", grpc_target="xds:///payments"`

// ruleTest is one `promtool test rules` test: input series and, at given
// times, the alerts that must be firing.
type ruleTest struct {
	name string
	// interval is the time between two values of the series (a scrape
	// interval); 1m when 0.
	interval time.Duration
	series   map[string]string // series → promtool values
	evals    []ruleEval
}

// ruleEval expects exactly the alerts want of alertname at time at.
type ruleEval struct {
	at    time.Duration
	alert string
	want  []firing
}

// firing is one firing alert: its labels (severity and alertname aside)
// and the value its annotations print.
type firing struct {
	labels map[string]string
	value  float64
}

// labelsOf returns the labels of pod plus more, as a map.
func labelsOf(more ...string) map[string]string {
	out := map[string]string{"job": "xds", "instance": "pod-1:9464", dashboards.LabelTarget: "xds:///payments"}
	for i := 0; i+1 < len(more); i += 2 {
		out[more[i]] = more[i+1]
	}
	return out
}

// beforeAndAt returns evaluations of alert one minute before d, when
// nothing fires, and at d, when want fires.
func beforeAndAt(alert string, d time.Duration, want ...firing) []ruleEval {
	return []ruleEval{{at: d - time.Minute, alert: alert}, {at: d, alert: alert, want: want}}
}

// ruleTests returns the tests of the rules of o (DefaultAlertOptions,
// with or without a job selector).
func ruleTests(o dashboards.AlertOptions) []ruleTest {
	server := `grpc_xds_server="xds.example.com:443"`
	resources := func(state string) string {
		return fmt.Sprintf(`%s{%s, %s, grpc_xds_authority="#old", grpc_xds_resource_type="envoy.config.cluster.v3.Cluster", grpc_xds_cache_state=%q}`,
			dashboards.MetricResources, pod, scope, state)
	}
	resourceLabels := func(state string) map[string]string {
		return labelsOf(dashboards.LabelAuthority, "#old", dashboards.LabelResourceType, "envoy.config.cluster.v3.Cluster", dashboards.LabelCacheState, state)
	}
	stateTest := func(alert string, d time.Duration, bad []string, good string) ruleTest {
		tc := ruleTest{name: alert, series: map[string]string{resources(good): "3x20"}}
		var want []firing
		for _, s := range bad {
			tc.series[resources(s)] = "2x20"
			want = append(want, firing{resourceLabels(s), 2})
		}
		tc.series[resources("requested")] = "0x20"
		tc.evals = beforeAndAt(alert, d, want...)
		return tc
	}
	bucket := func(outcome, le, values string) (string, string) {
		return fmt.Sprintf(`%s_bucket{%s, %s, %s, grpc_xds_resource_type="envoy.config.cluster.v3.Cluster", outcome=%q, le=%q}`,
			dashboards.MetricFetchDuration, pod, scope, server, outcome, le), values
	}
	latency := map[string]string{}
	for _, b := range [][3]string{
		// Answered fetches: all slower than 1s, p99 9.91s.
		{"acked", "1", "0x40"}, {"acked", "10", "0+10x40"}, {"acked", "+Inf", "0+10x40"},
		// Timeouts are no answer: left out however slow.
		{"timeout", "1", "0x40"}, {"timeout", "10", "0x40"}, {"timeout", "+Inf", "0+100x40"},
	} {
		k, v := bucket(b[0], b[1], b[2])
		latency[k] = v
	}
	failures := fmt.Sprintf(`%s{%s, %s, %s}`, dashboards.MetricServerFailures, pod, scope, server)
	otherFailures := strings.Replace(failures, "pod-1", "pod-2", 1)
	authority := func(server, priority string) string {
		return fmt.Sprintf(`%s{%s, %s, grpc_xds_authority="xdstp.example", grpc_xds_server=%q, priority=%q}`,
			dashboards.MetricAuthorityServer, pod, scope, server, priority)
	}
	tests := []ruleTest{
		{
			name: dashboards.AlertServerDisconnected,
			series: map[string]string{
				// Never connected: 0 from the start.
				fmt.Sprintf(`%s{%s, %s, %s}`, dashboards.MetricConnected, pod, scope, server):                           "0x20",
				fmt.Sprintf(`%s{%s, %s, grpc_xds_server="ok.example.com:443"}`, dashboards.MetricConnected, pod, scope): "1x20",
				// Disconnected for less than the alert's for.
				fmt.Sprintf(`%s{%s, %s, grpc_xds_server="flaky.example.com:443"}`, dashboards.MetricConnected, pod, scope): "1 0x3 1x20",
			},
			evals: beforeAndAt(dashboards.AlertServerDisconnected, o.DisconnectedFor,
				firing{labelsOf(dashboards.LabelServer, "xds.example.com:443"), 0}),
		},
		{
			name: dashboards.AlertServerFlapping,
			series: map[string]string{
				// Three failures within the window on pod-1, two on pod-2.
				failures:      "1x10 4x30",
				otherFailures: "1x10 3x30",
			},
			evals: []ruleEval{
				{at: 10 * time.Minute, alert: dashboards.AlertServerFlapping},
				{at: o.FlapWindow, alert: dashboards.AlertServerFlapping,
					want: []firing{{labelsOf(dashboards.LabelServer, "xds.example.com:443"), 3}}},
			},
		},
		stateTest(dashboards.AlertResourcesNACKed, o.NACKedFor, []string{"nacked", "nacked_but_cached"}, "acked"),
		stateTest(dashboards.AlertResourcesDoesNotExist, o.MissingFor, []string{"does_not_exist", "does_not_exist_but_cached", "timeout"}, "acked"),
		stateTest(dashboards.AlertResourcesError, o.ReceivedErrorFor, []string{"received_error", "received_error_but_cached"}, "acked"),
		{
			name: dashboards.AlertOnFallback,
			series: map[string]string{
				authority("fallback.example.com:443", "1"): "1x20",
				authority("primary.example.com:443", "0"):  "0x20",
				// Another authority on its primary.
				strings.Replace(authority("primary.example.com:443", "0"), "xdstp.example", "#old", 1): "1x20",
			},
			evals: beforeAndAt(dashboards.AlertOnFallback, o.FallbackFor,
				firing{labelsOf(dashboards.LabelAuthority, "xdstp.example", dashboards.LabelServer, "fallback.example.com:443", dashboards.LabelPriority, "1"), 1}),
		},
		{
			name:   dashboards.AlertFetchLatencyHigh,
			series: latency,
			// Pending from 1m, when the rate has two samples.
			evals: beforeAndAt(dashboards.AlertFetchLatencyHigh, time.Minute+o.LatencyFor,
				firing{labelsOf(dashboards.LabelServer, "xds.example.com:443", dashboards.LabelResourceType, "envoy.config.cluster.v3.Cluster"), 9.91}),
		},
	}
	tests = append(tests, loadReportingTest(o))
	tests = append(tests, dataPlaneTests(o)...)
	tests = append(tests, endpointsEjectedTests(o)...)
	tests = append(tests, serverTests(o)...)
	return append(tests, scrapeTests(o)...)
}

// loadReportingTest returns the test of the load reporting alert of o.
func loadReportingTest(o dashboards.AlertOptions) ruleTest {
	lrs := func(metric, server string) string {
		return fmt.Sprintf(`%s{%s, %s, grpc_xds_server=%q}`, metric, pod, scope, server)
	}
	// Rates need two samples: pending from 1m.
	at := time.Minute + o.LoadReportingFor
	return ruleTest{
		name: dashboards.AlertLoadReportingFailing,
		series: map[string]string{
			// A failure a minute and no report until 13m, when reports
			// go out again.
			lrs(dashboards.MetricLRSStreamFailures, "lrs.example.com:443"): "0+1x20",
			lrs(dashboards.MetricLRSReports, "lrs.example.com:443"):        "5x12 6+1x10",
			// One failure, and reports go on.
			lrs(dashboards.MetricLRSStreamFailures, "ok.example.com:443"): "0x4 1x20",
			lrs(dashboards.MetricLRSReports, "ok.example.com:443"):        "0+1x25",
			// No load reported, no failure.
			lrs(dashboards.MetricLRSStreamFailures, "idle.example.com:443"): "0x25",
			lrs(dashboards.MetricLRSReports, "idle.example.com:443"):        "0x25",
		},
		evals: append(beforeAndAt(dashboards.AlertLoadReportingFailing, at,
			firing{labelsOf(dashboards.LabelServer, "lrs.example.com:443"), at.Minutes()}),
			ruleEval{at: 13 * time.Minute, alert: dashboards.AlertLoadReportingFailing}),
	}
}

// channel is the label of the channel of the data-plane test series.
const channel = `xdslens_channel_target="xds:///payments"`

// channelLabels returns the labels of the channel's alerts, and more.
func channelLabels(more ...string) map[string]string {
	return labelsOf(append([]string{dashboards.LabelChannelTarget, "xds:///payments"}, more...)...)
}

// dataPlaneTests returns the tests of the data-plane alerts of o. Their
// series are scraped every 15s, so that the alerts' short window holds
// several samples.
func dataPlaneTests(o dashboards.AlertOptions) []ruleTest {
	d := o.DataPlane
	// picks is a pick counter; an empty cluster is a label Prometheus
	// does not store.
	picks := func(cluster, outcome string) string {
		c := ""
		if cluster != "" {
			c = fmt.Sprintf(", grpc_lb_backend_service=%q", cluster)
		}
		return fmt.Sprintf(`%s{%s, %s, %s%s, outcome=%q}`, dashboards.MetricDataPlanePicks, pod, channel, scope, c, outcome)
	}
	drops := func(leaf, category string) string {
		return fmt.Sprintf(`%s{%s, %s, %s, xdslens_leaf_cluster=%q, category=%q}`, dashboards.MetricDataPlaneDrops, pod, channel, scope, leaf, category)
	}
	calls := func(cluster, leaf, status string) string {
		return fmt.Sprintf(`%s{%s, %s, %s, grpc_lb_backend_service=%q, xdslens_leaf_cluster=%q, grpc_status=%q}`,
			dashboards.MetricDataPlaneCalls, pod, channel, scope, cluster, leaf, status)
	}
	gauge := func(metric, leaf string) string {
		return fmt.Sprintf(`%s{%s, %s, xdslens_leaf_cluster=%q}`, metric, pod, scope, leaf)
	}
	const scrape = 15 * time.Second
	// Rates need two samples: pending from the first evaluation, 1m.
	rated := time.Minute
	return []ruleTest{
		{
			name:     dashboards.AlertRPCsFailing,
			interval: scrape,
			series: map[string]string{
				// Per scrape: 90 sent, 10 config errors, 1 no_endpoint (1 %,
				// under the threshold), no drops.
				picks("c1", "sent"):          "0+90x60",
				picks("", "config_error"):    "0+10x60",
				picks("c1", "no_endpoint"):   "0+1x60",
				picks("c1", "dropped"):       "0x60",
				picks("c1", "cluster_error"): "0x60",
			},
			evals: beforeAndAt(dashboards.AlertRPCsFailing, rated+d.FailingFor,
				firing{channelLabels(dashboards.LabelOutcome, "config_error"), 10.0 / 101}),
		},
		rpcsFailingResolves(o, picks),
		{
			name:     dashboards.AlertBackendErrors,
			interval: scrape,
			series: map[string]string{
				// Cluster c1: 10 % UNIMPLEMENTED.
				calls("c1", "c1", "OK"):            "0+90x60",
				calls("c1", "c1", "UNIMPLEMENTED"): "0+10x60",
				// Aggregate cluster agg: 3 % UNAVAILABLE and 3 %
				// DEADLINE_EXCEEDED at leaf l2, 6 % in all.
				calls("agg", "l1", "OK"):                "0+50x60",
				calls("agg", "l2", "OK"):                "0+44x60",
				calls("agg", "l2", "UNAVAILABLE"):       "0+3x60",
				calls("agg", "l2", "DEADLINE_EXCEEDED"): "0+3x60",
				// Cluster c2: 1 % NOT_FOUND, under the threshold.
				calls("c2", "c2", "OK"):        "0+99x60",
				calls("c2", "c2", "NOT_FOUND"): "0+1x60",
			},
			evals: beforeAndAt(dashboards.AlertBackendErrors, rated+d.BackendErrorFor,
				firing{channelLabels(dashboards.LabelBackendService, "agg"), 0.06},
				firing{channelLabels(dashboards.LabelBackendService, "c1"), 0.1}),
		},
		backendErrorsFirstBurst(o, calls),
		{
			name:     dashboards.AlertRPCsDropped,
			interval: scrape,
			series: map[string]string{
				// Per scrape: 98 sent, 2 dropped by category lb (2 %).
				picks("c1", "sent"):     "0+98x60",
				picks("c1", "dropped"):  "0+2x60",
				drops("c1", "lb"):       "0+2x60",
				drops("c1", "throttle"): "0x60",
			},
			evals: beforeAndAt(dashboards.AlertRPCsDropped, rated+d.DroppedFor,
				firing{channelLabels(dashboards.LabelLeafCluster, "c1", dashboards.LabelCategory, "lb"), 0.02}),
		},
		{
			name:     dashboards.AlertCircuitBreaking,
			interval: scrape,
			series: map[string]string{
				picks("c1", "sent"):       "0+60x60",
				picks("c1", "overloaded"): "0+3x60",
				picks("c2", "overloaded"): "0x60",
			},
			evals: beforeAndAt(dashboards.AlertCircuitBreaking, rated+d.CircuitBreakingFor,
				firing{channelLabels(dashboards.LabelBackendService, "c1", dashboards.LabelOutcome, "overloaded"), 0.2}),
		},
		{
			name: dashboards.AlertNearMaxRequests,
			series: map[string]string{
				gauge(dashboards.MetricDataPlaneInFlight, "c1"):    "95x30",
				gauge(dashboards.MetricDataPlaneMaxRequests, "c1"): "100x30",
				gauge(dashboards.MetricDataPlaneInFlight, "c2"):    "10x30",
				gauge(dashboards.MetricDataPlaneMaxRequests, "c2"): "100x30",
			},
			evals: beforeAndAt(dashboards.AlertNearMaxRequests, d.NearMaxRequestsFor,
				firing{labelsOf(dashboards.LabelLeafCluster, "c1"), 0.95}),
		},
	}
}

// RPCsFailingResolveBound is how soon after the failures stop
// XdsClientRPCsFailing must be resolved, with the committed rules and an
// evaluation every minute: the short window and one evaluation. RUNBOOK.md
// and the READMEs give it.
const RPCsFailingResolveBound = 2 * time.Minute

// rpcsFailingResolves returns the test of the time XdsClientRPCsFailing
// takes to resolve: every RPC of a channel fails for 10 minutes (long
// enough to fire), then every one succeeds; within
// RPCsFailingResolveBound the alert is resolved.
func rpcsFailingResolves(o dashboards.AlertOptions, picks func(cluster, outcome string) string) ruleTest {
	const stop = 10 * time.Minute
	return ruleTest{
		name:     dashboards.AlertRPCsFailing + " resolves",
		interval: 15 * time.Second,
		series: map[string]string{
			// 40 scrapes of failures, then 60 of successes.
			picks("c1", "no_endpoint"): "0+10x40 400x59",
			picks("c1", "sent"):        "0x40 10+10x59",
		},
		evals: []ruleEval{
			{at: time.Minute + o.DataPlane.FailingFor, alert: dashboards.AlertRPCsFailing,
				want: []firing{{channelLabels(dashboards.LabelBackendService, "c1", dashboards.LabelOutcome, "no_endpoint"), 1}}},
			{at: stop, alert: dashboards.AlertRPCsFailing,
				want: []firing{{channelLabels(dashboards.LabelBackendService, "c1", dashboards.LabelOutcome, "no_endpoint"), 1}}},
			{at: stop + RPCsFailingResolveBound, alert: dashboards.AlertRPCsFailing},
		},
	}
}

// scrapeTests returns the tests of the scrape alerts of o.
func scrapeTests(o dashboards.AlertOptions) []ruleTest {
	dead := map[string]string{"job": "xds", "instance": "pod-1:9464"}
	connected := fmt.Sprintf(`%s{%s, %s, grpc_xds_server="xds.example.com:443"}`, dashboards.MetricConnected, pod, scope)
	series := map[string]string{
		// pod-1 exports xDS metrics at 0m, then its scrapes fail.
		`up{job="xds", instance="pod-1:9464"}`: "1 0x100",
		connected:                              "1",
		// A process of another job, without xDS clients, is down too.
		`up{job="db", instance="db-1:9100"}`: "0x100",
	}
	if o.JobSelector == "" {
		return []ruleTest{{
			name:   dashboards.AlertScrapeFailed + " (no job selector)",
			series: series,
			evals: append(beforeAndAt(dashboards.AlertScrapeFailed, time.Minute+o.ScrapeFailedFor, firing{dead, 0}),
				// No longer known as an xDS client after the lookback.
				ruleEval{at: time.Minute + o.ScrapeLookback, alert: dashboards.AlertScrapeFailed}),
		}}
	}
	noTarget := map[string]string{`up{job="db", instance="db-1:9100"}`: "1x20"}
	return []ruleTest{
		{
			name:   dashboards.AlertScrapeFailed + " (" + o.JobSelector + ")",
			series: series,
			evals: append(beforeAndAt(dashboards.AlertScrapeFailed, time.Minute+o.ScrapeFailedFor, firing{dead, 0}),
				// Still watched long after: the job says it is an xDS client.
				ruleEval{at: time.Minute + o.ScrapeLookback, alert: dashboards.AlertScrapeFailed, want: []firing{{dead, 0}}},
				ruleEval{at: 10 * time.Minute, alert: dashboards.AlertJobAbsent}),
		},
		{
			name:   dashboards.AlertJobAbsent + " (" + o.JobSelector + ")",
			series: noTarget,
			evals:  beforeAndAt(dashboards.AlertJobAbsent, o.ScrapeFailedFor, firing{map[string]string{"job": "xds"}, 1}),
		},
	}
}

// promtoolTestFile writes the promtool test file of tests for the rule
// file rules, expecting the annotations of the alerts of group.
func promtoolTestFile(t *testing.T, rules string, group dashboards.RuleGroup, tests []ruleTest) string {
	t.Helper()
	byName := map[string]dashboards.Rule{}
	for _, r := range group.Rules {
		byName[r.Alert] = r
	}
	var b strings.Builder
	fmt.Fprintf(&b, "rule_files: [%s]\nevaluation_interval: 1m\ntests:\n", quoteYAML(rules))
	for _, tc := range tests {
		interval := tc.interval
		if interval == 0 {
			interval = time.Minute
		}
		fmt.Fprintf(&b, "  # %s\n  - interval: %s\n    input_series:\n", tc.name, interval)
		for _, s := range slices.Sorted(maps.Keys(tc.series)) {
			fmt.Fprintf(&b, "      - series: %s\n        values: %s\n", quoteYAML(s), quoteYAML(tc.series[s]))
		}
		b.WriteString("    alert_rule_test:\n")
		for _, e := range tc.evals {
			r, ok := byName[e.alert]
			if !ok {
				t.Fatalf("%s: no alert %s", tc.name, e.alert)
			}
			fmt.Fprintf(&b, "      - eval_time: %s\n        alertname: %s\n        exp_alerts:", promDuration(e.at), e.alert)
			if len(e.want) == 0 {
				b.WriteString(" []\n")
				continue
			}
			b.WriteString("\n")
			for _, f := range e.want {
				b.WriteString("          - exp_labels:\n")
				l := maps.Clone(f.labels)
				l["severity"] = r.Severity
				for _, k := range slices.Sorted(maps.Keys(l)) {
					fmt.Fprintf(&b, "              %s: %s\n", k, quoteYAML(l[k]))
				}
				b.WriteString("            exp_annotations:\n")
				for _, a := range [][2]string{{"description", r.Description}, {"runbook_url", r.RunbookURL}, {"summary", r.Summary}} {
					fmt.Fprintf(&b, "              %s: %s\n", a[0], quoteYAML(expand(t, a[1], f)))
				}
			}
		}
	}
	path := filepath.Join(t.TempDir(), "rules_test.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// expand expands an annotation template as Prometheus does for an alert
// with f's labels and value: the template sees $labels and $value. Of
// Prometheus's own functions only humanizeDuration, for values between 1s
// and 1m here, and humanizePercentage are used.
func expand(t *testing.T, text string, f firing) string {
	t.Helper()
	tmpl, err := template.New("a").Option("missingkey=zero").Funcs(template.FuncMap{
		"humanizeDuration": func(v float64) (string, error) {
			if v < 1 || v >= 60 {
				return "", fmt.Errorf("humanizeDuration(%v): only 1s to 1m are expected", v)
			}
			return fmt.Sprintf("%.4gs", v), nil
		},
		"humanizePercentage": func(v float64) string { return fmt.Sprintf("%.4g%%", v*100) },
	}).Parse("{{$labels := .Labels}}{{$value := .Value}}" + text)
	if err != nil {
		t.Fatalf("annotation %q: %v", text, err)
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, struct {
		Labels map[string]string
		Value  float64
	}{f.labels, f.value}); err != nil {
		t.Fatalf("annotation %q: %v", text, err)
	}
	return b.String()
}

// promDuration writes d as a promtool eval_time.
func promDuration(d time.Duration) string {
	return fmt.Sprintf("%dm", int(d.Minutes()))
}

// TestPromtoolTestRules runs `promtool test rules` on the rule file the
// generator writes, with and without a job selector: every alert fires on
// what it is about, not before its `for:` ends, and not on the healthy
// series beside it.
func TestPromtoolTestRules(t *testing.T) {
	tool := promtool(t)
	withJob := dashboards.DefaultAlertOptions()
	withJob.JobSelector = `job="xds"`
	for _, o := range []dashboards.AlertOptions{dashboards.DefaultAlertOptions(), withJob} {
		t.Run("job selector "+o.JobSelector, func(t *testing.T) {
			dir := t.TempDir()
			rules := filepath.Join(dir, "rules.yaml")
			if err := os.WriteFile(rules, dashboards.RuleFile(o), 0o644); err != nil {
				t.Fatal(err)
			}
			tests := ruleTests(o)
			var tested []string
			for _, tc := range tests {
				for _, e := range tc.evals {
					tested = append(tested, e.alert)
				}
			}
			for _, r := range dashboards.AlertRules(o).Rules {
				if !slices.Contains(tested, r.Alert) {
					t.Errorf("alert %s has no promtool test", r.Alert)
				}
			}
			path := promtoolTestFile(t, rules, dashboards.AlertRules(o), tests)
			out, err := exec.Command(tool, "test", "rules", path).CombinedOutput()
			if err != nil {
				body, _ := os.ReadFile(path)
				t.Fatalf("promtool test rules: %v\n%s\ntest file:\n%s", err, out, body)
			}
		})
	}
}
