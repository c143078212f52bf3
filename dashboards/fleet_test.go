package dashboards_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/xdslens/xdslens/dashboards"
)

// generated returns the dashboards that dashboards.Files(opts...) builds,
// parsed, keyed by file.
func generated(t *testing.T, opts ...dashboards.Option) map[string]rawDashboard {
	t.Helper()
	files, err := dashboards.Files(opts...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]rawDashboard{}
	for _, f := range dashboardFiles {
		out[f] = parseDashboard(t, f, files[f])
	}
	return out
}

// fleetProblems returns what is wrong with the fleet filtering of expr:
// every selector must carry a matcher `name=~"$name"` for each of
// names.
func fleetProblems(expr string, names []string) []string {
	sc, err := scanPromQL(substitute(expr, "1m", marked(names)))
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	for _, vs := range sc.selectors {
		for _, l := range names {
			if !slices.Contains(vs.matchers, matcher{l, "=~", "VAR_" + l}) {
				problems = append(problems, vs.String()+" does not filter by $"+l)
			}
		}
	}
	return problems
}

// marked gives each variable of labels the value VAR_name, so that a
// matcher can be traced to its variable.
func marked(labels []string) map[string]string {
	m := map[string]string{}
	for _, l := range labels {
		m[l] = "VAR_" + l
	}
	return m
}

// TestPanelsFilterByFleet checks that every selector of every panel query
// filters by the job and instance variables, and by the group label's
// variable when there is one; and that the group label is a variable
// between the data source and the job.
func TestPanelsFilterByFleet(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []dashboards.Option
		labels []string
	}{
		{"default", nil, []string{"job", "instance"}},
		{"cluster", []dashboards.Option{dashboards.WithGroupLabel("cluster")}, []string{"cluster", "job", "instance"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			for f, d := range generated(t, tc.opts...) {
				for _, q := range d.queries(f) {
					n++
					for _, p := range fleetProblems(q.expr, tc.labels) {
						t.Errorf("%s: %s", q.name(), p)
					}
				}
				var names []string
				for _, v := range d.Templating.List {
					names = append(names, v.Name)
				}
				if want := append([]string{"datasource"}, tc.labels...); !slices.Equal(names[:len(want)], want) {
					t.Errorf("%s: variables %v, want them to start with %v", f, names, want)
				}
			}
			if n < 20 {
				t.Fatalf("only %d queries", n)
			}
		})
	}
}

// TestFleetCheckCatchesMissingFilters checks that fleetProblems fails on
// a selector without the job or instance matcher.
func TestFleetCheckCatchesMissingFilters(t *testing.T) {
	for _, expr := range []string{
		`up`,
		`up{job=~"$job"}`,
		`sum(rate(x{job=~"$job", instance=~"$instance"}[1m])) / sum(rate(y{job=~"$job"}[1m]))`,
		`up{job="$job", instance=~"$instance"}`,
	} {
		if len(fleetProblems(expr, []string{"job", "instance"})) == 0 {
			t.Errorf("fleetProblems accepted %q", expr)
		}
	}
}

// TestWithGroupLabelChecksTheName checks that a group label must be a
// label name and must not collide with a variable.
func TestWithGroupLabelChecksTheName(t *testing.T) {
	for _, bad := range []string{"not a label", "1cluster", "job", "instance", "target", "datasource"} {
		if _, err := dashboards.Files(dashboards.WithGroupLabel(bad)); err == nil {
			t.Errorf("WithGroupLabel(%q) accepted", bad)
		}
	}
}

// TestLegendsNameTheInstance checks that a legend that names a client's
// target also names the instance: pods share target names.
func TestLegendsNameTheInstance(t *testing.T) {
	for _, q := range allPanelQueries(t) {
		if strings.Contains(q.legend, "{{"+dashboards.LabelTarget+"}}") && !strings.Contains(q.legend, "{{instance}}") {
			t.Errorf("%s: legend %q names the target but not the instance", q.name(), q.legend)
		}
	}
}

// TestValuePanelsAreInstant checks that the panels that show one value
// per series (stat, bar gauge, table) query it now: a range query reduced
// to its last value shows a process that is gone as it last was.
func TestValuePanelsAreInstant(t *testing.T) {
	n := 0
	for _, q := range allPanelQueries(t) {
		switch q.panelType {
		case "stat", "bargauge", "table":
			n++
			if !q.instant {
				t.Errorf("%s: a %s panel with a range query", q.name(), q.panelType)
			}
		}
	}
	if n < 5 {
		t.Fatalf("only %d queries of stat, bar gauge and table panels", n)
	}
}

// TestNoRequestUnits checks that no panel labels a rate of things that
// are not requests as requests per second.
func TestNoRequestUnits(t *testing.T) {
	for _, f := range dashboardFiles {
		for _, p := range readDashboard(t, f).panels() {
			if u := p.FieldConfig.Defaults.Unit; u == "reqps" || u == "reqpm" {
				t.Errorf("%s: %s: unit %q, and xDS clients send no requests there", f, p.Title, u)
			}
		}
	}
}

// TestCacheStateColors checks that each cache state has a color of its
// own, and that every panel draws a series of a state, or a table cell
// naming one, in that color.
func TestCacheStateColors(t *testing.T) {
	seen := map[string]string{}
	for _, s := range dashboards.CacheStates {
		c := dashboards.CacheStateColor(s)
		if c == "" || seen[c] != "" {
			t.Errorf("state %s: color %q (also %q's)", s, c, seen[c])
		}
		seen[c] = s
	}
	colored := 0
	for _, f := range dashboardFiles {
		for _, p := range readDashboard(t, f).panels() {
			for _, o := range p.FieldConfig.Overrides {
				for _, prop := range o.Properties {
					switch prop.ID {
					case "color":
						re, _ := o.Matcher.Options.(string)
						for _, s := range stateMatches(re) {
							colored++
							v, _ := prop.Value.(map[string]any)
							if got := v["fixedColor"]; got != dashboards.CacheStateColor(s) {
								t.Errorf("%s: %s: the series of state %s (matcher %q) are %v, want %s",
									f, p.Title, s, re, got, dashboards.CacheStateColor(s))
							}
						}
					case "mappings":
						colored += checkStateMappings(t, f+": "+p.Title, prop.Value)
					}
				}
			}
		}
	}
	if colored < 3*len(dashboards.CacheStates) {
		t.Errorf("only %d state colorings found", colored)
	}
}

// stateMatches returns the cache states whose legend (the state alone,
// or labels then the state) the override regexp /re/ matches.
func stateMatches(re string) []string {
	if !strings.HasPrefix(re, "/") || !strings.HasSuffix(re, "/") || len(re) < 2 {
		return nil
	}
	r, err := regexp.Compile(re[1 : len(re)-1])
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range dashboards.CacheStates {
		if r.MatchString(s) || r.MatchString("#old envoy.config.cluster.v3.Cluster "+s) {
			out = append(out, s)
		}
	}
	return out
}

// checkStateMappings checks the colors of value mappings that name cache
// states, and returns how many it checked.
func checkStateMappings(t *testing.T, name string, mappings any) int {
	t.Helper()
	n := 0
	list, _ := mappings.([]any)
	for _, m := range list {
		opts, _ := m.(map[string]any)["options"].(map[string]any)
		for value, r := range opts {
			if !slices.Contains(dashboards.CacheStates, value) {
				continue
			}
			n++
			if got := r.(map[string]any)["color"]; got != dashboards.CacheStateColor(value) {
				t.Errorf("%s: state %s mapped to %v, want %s", name, value, got, dashboards.CacheStateColor(value))
			}
		}
	}
	return n
}
