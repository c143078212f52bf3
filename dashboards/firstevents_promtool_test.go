package dashboards_test

// A status's calls series is born with its first call, which rate()
// cannot count: XdsClientBackendErrors and the Calls by status code panel
// count it, checked with `promtool test rules` on a first burst of a new
// status.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdslens/xdslens/dashboards"
)

// backendErrorsFirstBurst returns the test of XdsClientBackendErrors on a
// status that a cluster's backends begin to answer: its calls series is
// born at 2m with a burst of 50 calls and grows by 50 a scrape, while
// cluster c1's OK calls grow by 90 a scrape from 0m. The alert is pending
// from the burst's evaluation, 2m, so it fires at 2m + BackendErrorFor; a
// rate, which needs the series' second sample, would make it pending a
// rule evaluation later, and not firing yet then.
func backendErrorsFirstBurst(o dashboards.AlertOptions, calls func(cluster, leaf, status string) string) ruleTest {
	born := 2 * time.Minute
	// At 2m + BackendErrorFor the long window holds 20 scrapes: 1000
	// UNIMPLEMENTED calls of 2800.
	return ruleTest{
		name:     dashboards.AlertBackendErrors + " counts a new status's first burst",
		interval: 15 * time.Second,
		series: map[string]string{
			calls("c1", "c1", "OK"):            "0+90x60",
			calls("c1", "c1", "UNIMPLEMENTED"): "_x8 50+50x52",
		},
		evals: beforeAndAt(dashboards.AlertBackendErrors, born+o.DataPlane.BackendErrorFor,
			firing{channelLabels(dashboards.LabelBackendService, "c1"), 1000.0 / 2800}),
	}
}

// exprTest is one promql_expr_test of promtool: expr evaluated at at
// gives exactly want (labels → value).
type exprTest struct {
	at   time.Duration
	want map[string]float64
}

// TestCallsByStatusCountsFirstCalls evaluates the query of Calls by
// status code with promtool over a status that appears with one burst of
// 3 calls and no more: the panel shows the 3 calls for the interval after
// the burst (a rate shows nothing, ever), then 0.
func TestCallsByStatusCountsFirstCalls(t *testing.T) {
	tool := promtool(t)
	expr := panelExpr(t, "Calls by status code", map[string]string{"job": "xds", "instance": "pod-1:9464", "target": "xds:///payments"})
	calls := func(status string) string {
		return fmt.Sprintf(`%s{%s, %s, %s, grpc_lb_backend_service="c1", xdslens_leaf_cluster="c1", grpc_status=%q}`,
			dashboards.MetricDataPlaneCalls, pod, channel, scope, status)
	}
	series := map[string]string{
		calls("OK"): "0+10x40",
		// Born at 2m with 3 calls, then none: the burst is all there is.
		calls("UNIMPLEMENTED"): "_x8 3x32",
	}
	labels := func(status string) string {
		return fmt.Sprintf(`{grpc_lb_backend_service="c1", grpc_status=%q}`, status)
	}
	// The window, $__rate_interval, is rateWindow (1m): 4 scrapes, 40 OK
	// calls.
	tests := []exprTest{
		{at: 2 * time.Minute, want: map[string]float64{labels("OK"): 40, labels("UNIMPLEMENTED"): 3}},
		{at: 2*time.Minute + 45*time.Second, want: map[string]float64{labels("OK"): 40, labels("UNIMPLEMENTED"): 3}},
		{at: 3*time.Minute + 15*time.Second, want: map[string]float64{labels("OK"): 40, labels("UNIMPLEMENTED"): 0}},
	}
	runExprTests(t, tool, 15*time.Second, series, expr, tests)
}

// runExprTests runs promtool's promql_expr_test of expr over series (one
// value every interval) at the times of tests.
func runExprTests(t *testing.T, tool string, interval time.Duration, series map[string]string, expr string, tests []exprTest) {
	t.Helper()
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, []byte("groups: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "rule_files: [%s]\nevaluation_interval: 1m\ntests:\n  - interval: %s\n    input_series:\n", quoteYAML(rules), interval)
	for s, v := range series {
		fmt.Fprintf(&b, "      - series: %s\n        values: %s\n", quoteYAML(s), quoteYAML(v))
	}
	b.WriteString("    promql_expr_test:\n")
	for _, tc := range tests {
		fmt.Fprintf(&b, "      - expr: %s\n        eval_time: %s\n        exp_samples:\n", quoteYAML(expr), tc.at)
		for l, v := range tc.want {
			fmt.Fprintf(&b, "          - labels: %s\n            value: %v\n", quoteYAML(l), v)
		}
	}
	path := filepath.Join(dir, "expr_test.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(tool, "test", "rules", path).CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s\ntest file:\n%s", err, out, b.String())
	}
}
