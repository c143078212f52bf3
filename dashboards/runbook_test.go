package dashboards_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/xdslens/xdslens/dashboards"
)

// runbookLinks returns, for each alert, the titles of the panels of ds
// that link to its runbook section, and reports through t every runbook
// link that is not a new-tab link to base#alert of a known alert.
func runbookLinks(t *testing.T, ds map[string]rawDashboard, base string, alerts []string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for f, d := range ds {
		for _, p := range d.panels() {
			for _, l := range p.Links {
				alert, ok := strings.CutPrefix(l.Title, dashboards.RunbookLinkPrefix)
				if !ok {
					continue
				}
				if !slices.Contains(alerts, alert) {
					t.Errorf("%s: %s: runbook link to %q, which is not an alert", f, p.Title, alert)
					continue
				}
				if want := base + "#" + strings.ToLower(alert); l.URL != want || l.Type != "link" || !l.TargetBlank {
					t.Errorf("%s: %s: link %+v, want a new-tab link to %s", f, p.Title, l, want)
				}
				out[alert] = append(out[alert], p.Title)
			}
		}
	}
	return out
}

// TestPanelsLinkRunbooks checks that every alert's runbook section is
// linked from the panels that show its cause (at least one each), at the
// base URL of the alert options, for the committed dashboards and for a
// base URL of one's own.
func TestPanelsLinkRunbooks(t *testing.T) {
	o := dashboards.DefaultAlertOptions()
	o.JobSelector = `job="payments"` // every alert, XdsClientJobAbsent included
	var alerts []string
	for _, r := range dashboards.AlertRules(o).Rules {
		alerts = append(alerts, r.Alert)
	}
	committed := map[string]rawDashboard{}
	for _, f := range dashboardFiles {
		committed[f] = readDashboard(t, f)
	}
	mine := o
	mine.RunbookURL = "https://wiki.example.com/xds/RUNBOOK.md"
	for _, tc := range []struct {
		name string
		ds   map[string]rawDashboard
		base string
	}{
		{"committed", committed, o.RunbookURL},
		{"own runbook", generated(t, dashboards.WithAlertOptions(mine)), mine.RunbookURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			links := runbookLinks(t, tc.ds, tc.base, alerts)
			for _, a := range alerts {
				if len(links[a]) == 0 {
					t.Errorf("no panel links to the runbook of %s", a)
				}
			}
		})
	}
	// Some panels the alerts are about, by name.
	links := runbookLinks(t, committed, o.RunbookURL, alerts)
	for alert, panel := range map[string]string{
		dashboards.AlertScrapeFailed:          "Scrape health",
		dashboards.AlertServerDisconnected:    "Time disconnected",
		dashboards.AlertServerFlapping:        "Server failures",
		dashboards.AlertResourcesDoesNotExist: "Fetch outcomes",
		dashboards.AlertOnFallback:            "Server in use per authority",
		dashboards.AlertFetchLatencyHigh:      "Fetch latency p50 / p99 by type",
		dashboards.AlertLoadReportingFailing:  "LRS stream failures",
		dashboards.AlertBackendErrors:         "Calls failing at backends by cluster",
		dashboards.AlertEndpointsEjected:      "Ejected endpoints by cluster",
	} {
		if !slices.Contains(links[alert], panel) {
			t.Errorf("panel %q does not link to the runbook of %s (linked from %q)", panel, alert, links[alert])
		}
	}
}

// TestEveryMetricOnAPanel checks that some panel reads each series the
// dashboards know of (the load reporting ones included), itself or through
// a recorded series, the histogram's _sum and _count aside.
func TestEveryMetricOnAPanel(t *testing.T) {
	read := map[string]bool{}
	names := func(expr string) []string {
		sc, err := scanPromQL(substitute(expr, "1m"))
		if err != nil {
			t.Fatalf("%q: %v", expr, err)
		}
		var out []string
		for _, s := range sc.selectors {
			out = append(out, s.names...)
		}
		return out
	}
	for _, q := range allPanelQueries(t) {
		for _, n := range names(q.expr) {
			read[n] = true
		}
	}
	for _, r := range dashboards.RecordingRules().Rules {
		if read[r.Record] {
			for _, n := range names(r.Expr) {
				read[n] = true
			}
		}
	}
	for name := range seriesLabels {
		if !read[name] && !strings.HasSuffix(name, "_sum") && !strings.HasSuffix(name, "_count") {
			t.Errorf("no panel reads %s", name)
		}
	}
}
