package dashboards_test

// The checks that run promtool, Prometheus's own tool, on every rule and
// every query the dashboards hold.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdslens/xdslens/dashboards"
)

// promtool returns the path of promtool, or skips the test.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not found: install Debian's prometheus package (.ci/run does) to check the rules with it")
	}
	return p
}

// TestPromtoolCheckRules runs `promtool check rules` on the committed rule
// file.
func TestPromtoolCheckRules(t *testing.T) {
	tool := promtool(t)
	out, err := exec.Command(tool, "check", "rules", filepath.FromSlash(dashboards.RulesFile)).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

// TestPromtoolParsesQueries writes every panel query, every variable's
// selector and every rule expression (with and without a job selector) as
// a recording rule and runs `promtool check rules` on them: the PromQL
// parser of the Prometheus installed here checks that each is valid.
func TestPromtoolParsesQueries(t *testing.T) {
	tool := promtool(t)
	var exprs []string
	for _, q := range allPanelQueries(t) {
		exprs = append(exprs, substitute(q.expr, "1m"))
	}
	for _, s := range variableQueries(t) {
		exprs = append(exprs, substitute(s, "1m"))
	}
	for _, g := range ruleGroups() {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	if out, err := promtoolCheckExprs(t, tool, exprs); err != nil {
		t.Fatalf("promtool check rules on the queries: %v\n%s", err, out)
	}
}

// TestPromtoolCatchesMistakes checks that promtoolCheckExprs fails on
// expressions that are not PromQL.
func TestPromtoolCatchesMistakes(t *testing.T) {
	tool := promtool(t)
	for _, expr := range []string{
		`sum(rate(grpc_xds_client_connected[1m])`,
		`sum by (grpc_target (grpc_xds_client_connected)`,
		`rate(grpc_xds_client_connected[1 m])`,
		`grpc_xds_client_connected{grpc_target=~"("}`,
		`histogram_quantile(0.99)`,
	} {
		if _, err := promtoolCheckExprs(t, tool, []string{expr}); err == nil {
			t.Errorf("promtool accepted %q", expr)
		}
	}
}

// promtoolCheckExprs runs `promtool check rules` on a rule file that
// records each of exprs.
func promtoolCheckExprs(t *testing.T, tool string, exprs []string) ([]byte, error) {
	t.Helper()
	var b strings.Builder
	b.WriteString("groups:\n  - name: queries\n    rules:\n")
	for i, e := range exprs {
		fmt.Fprintf(&b, "      - record: query_%d\n        expr: %s\n", i, quoteYAML(e))
	}
	path := filepath.Join(t.TempDir(), "queries.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return exec.Command(tool, "check", "rules", path).CombinedOutput()
}

// quoteYAML quotes s as a YAML single-quoted scalar.
func quoteYAML(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// ruleGroups are the rule groups the generator writes: the recording
// rules, and the alerts with and without a job selector.
func ruleGroups() []dashboards.RuleGroup {
	o := dashboards.DefaultAlertOptions()
	o.JobSelector = `job=~"payments|checkout"`
	return []dashboards.RuleGroup{
		dashboards.RecordingRules(),
		dashboards.AlertRules(dashboards.DefaultAlertOptions()),
		dashboards.AlertRules(o),
	}
}
