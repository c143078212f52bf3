package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdslens/xdslens/dashboards"
	"github.com/xdslens/xdslens/internal/testing/testmain"
)

// The flags reach every file: the runbook URL is in each alert's
// runbook_url annotation and each panel's runbook link, the job selector
// in the alerts, the group label in the dashboards.
func TestFlags(t *testing.T) {
	dir := t.TempDir()
	const runbook = "https://wiki.example.com/xds/RUNBOOK.md"
	var stderr bytes.Buffer
	if code := run([]string{"-dir", dir, "-runbook-url", runbook, "-job-selector", `job="payments"`, "-group-label", "cluster"}, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	files, err := dashboards.Files()
	if err != nil {
		t.Fatal(err)
	}
	for p := range files {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
			t.Errorf("%s not written: %v", p, err)
		}
	}
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	defaultURL := dashboards.DefaultAlertOptions().RunbookURL
	for _, p := range []string{dashboards.RulesFile, dashboards.MixinAlertsFile, dashboards.PrometheusRuleFile, dashboards.OverviewFile, dashboards.DrillDownFile} {
		s := read(p)
		if !strings.Contains(s, runbook+"#xdsclient") || strings.Contains(s, defaultURL) {
			t.Errorf("%s does not link to the runbook at %s alone", p, runbook)
		}
	}
	if s := read(dashboards.RulesFile); !strings.Contains(s, `job=\"payments\"`) {
		t.Errorf("%s: the job selector is not in the alerts", dashboards.RulesFile)
	}
	if s := read(dashboards.OverviewFile); !strings.Contains(s, `cluster=~\"$cluster\"`) {
		t.Errorf("%s: the group label is not in the queries", dashboards.OverviewFile)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-no-such-flag"},
		{"extra"},
	} {
		if code := run(append([]string{"-dir", t.TempDir()}, args...), &bytes.Buffer{}); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	for _, args := range [][]string{
		{"-runbook-url", ""},
		{"-group-label", "not a label"},
	} {
		var stderr bytes.Buffer
		if code := run(append([]string{"-dir", t.TempDir()}, args...), &stderr); code != 1 || !strings.HasPrefix(stderr.String(), "gen: ") {
			t.Errorf("%q: exit %d (%q), want 1 and a message", args, code, stderr.String())
		}
	}
}

// TestMain ends the test binary without the race detector's pause at exit.
func TestMain(m *testing.M) { testmain.Run(m) }
