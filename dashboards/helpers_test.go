package dashboards_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/xdslens/xdslens/dashboards"
)

// panelQuery is one query of one panel of a committed dashboard.
type panelQuery struct {
	// file is the dashboard file, title the panel title.
	file, title string
	// panelType is the Grafana panel type, such as "timeseries".
	panelType string
	refID     string
	expr      string
	legend    string
	// instant is true for an instant query (tables), false for a range
	// query.
	instant bool
}

// name identifies the query in test messages.
func (q panelQuery) name() string {
	return filepath.Base(q.file) + ": " + q.title + " [" + q.refID + "]"
}

// dashboardFiles are the committed dashboard JSON files.
var dashboardFiles = []string{dashboards.OverviewFile, dashboards.DrillDownFile}

// readFile reads a committed file of the dashboards directory.
func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.FromSlash(path))
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return b
}

// rawPanel is the part of a panel's JSON the tests look at.
type rawPanel struct {
	Type        string          `json:"type"`
	ID          int             `json:"id"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Datasource  json.RawMessage `json:"datasource"`
	Panels      []rawPanel      `json:"panels"`
	Links       []struct {
		Title       string `json:"title"`
		Type        string `json:"type"`
		URL         string `json:"url"`
		TargetBlank bool   `json:"targetBlank"`
	} `json:"links"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
		Overrides []struct {
			Matcher struct {
				ID      string `json:"id"`
				Options any    `json:"options"`
			} `json:"matcher"`
			Properties []struct {
				ID    string `json:"id"`
				Value any    `json:"value"`
			} `json:"properties"`
		} `json:"overrides"`
	} `json:"fieldConfig"`
	Targets []struct {
		RefID   string `json:"refId"`
		Expr    string `json:"expr"`
		Legend  string `json:"legendFormat"`
		Instant bool   `json:"instant"`
		Range   bool   `json:"range"`
	} `json:"targets"`
}

// rawDashboard is the part of a dashboard's JSON the tests look at.
type rawDashboard struct {
	Panels     []rawPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// readDashboard parses a committed dashboard file.
func readDashboard(t testing.TB, path string) rawDashboard {
	t.Helper()
	return parseDashboard(t, path, readFile(t, path))
}

// parseDashboard parses the dashboard JSON js, named name in messages.
func parseDashboard(t testing.TB, name string, js []byte) rawDashboard {
	t.Helper()
	var d rawDashboard
	if err := json.Unmarshal(js, &d); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d
}

// panels returns every panel of d that is not a row, rows' panels
// included.
func (d rawDashboard) panels() []rawPanel {
	var out []rawPanel
	for _, p := range d.Panels {
		if p.Type == "row" {
			out = append(out, p.Panels...)
			continue
		}
		out = append(out, p)
	}
	return out
}

// allPanelQueries returns every query of every panel of the committed
// dashboards.
func allPanelQueries(t testing.TB) []panelQuery {
	t.Helper()
	var out []panelQuery
	for _, f := range dashboardFiles {
		out = append(out, readDashboard(t, f).queries(f)...)
	}
	return out
}

// queries returns every query of every panel of d, a dashboard read from
// file.
func (d rawDashboard) queries(file string) []panelQuery {
	var out []panelQuery
	for _, p := range d.panels() {
		for _, tg := range p.Targets {
			out = append(out, panelQuery{
				file: file, title: p.Title, panelType: p.Type,
				refID: tg.RefID, expr: tg.Expr, legend: tg.Legend, instant: tg.Instant && !tg.Range,
			})
		}
	}
	return out
}

// variableQueries returns the selector inside each label_values() query
// variable of the committed dashboards, keyed by "file: variable".
func variableQueries(t testing.TB) map[string]string {
	t.Helper()
	re := regexp.MustCompile(`^label_values\((.*), *(\w+)\)$`)
	out := map[string]string{}
	for _, f := range dashboardFiles {
		for _, v := range readDashboard(t, f).Templating.List {
			if v.Type != "query" {
				continue
			}
			q, _ := v.Query.(string)
			m := re.FindStringSubmatch(q)
			if m == nil {
				t.Fatalf("%s: variable %s: query %q is not label_values(selector, label)", f, v.Name, q)
			}
			out[f+": "+v.Name] = m[1]
		}
	}
	return out
}

// varRE matches a Grafana template variable: $name or ${name}. A name
// starts with a letter or an underscore: "$1", label_replace's first
// capture group, is no variable, and Grafana leaves it as it is.
var varRE = regexp.MustCompile(`\$\{?([A-Za-z_]\w*)\}?`)

// grafanaValues are the values Grafana gives its built-in variables for
// a time range of window (a Prometheus duration of whole seconds, such as
// "1m"), which also stands for $__rate_interval.
func grafanaValues(window string) map[string]string {
	d, err := time.ParseDuration(window)
	if err != nil {
		panic(err)
	}
	return map[string]string{
		"__rate_interval": window,
		"__range":         window,
		"__range_s":       strconv.Itoa(int(d.Seconds())),
	}
}

// substitute replaces Grafana's template variables in expr as a query
// would see them: the built-in variables as grafanaValues(window) has
// them, the variables in set with their values (regular expressions, as
// Grafana formats them for =~), and every other one as "All" (".*").
func substitute(expr, window string, set ...map[string]string) string {
	values := grafanaValues(window)
	for _, m := range set {
		for k, v := range m {
			values[k] = v
		}
	}
	return varRE.ReplaceAllStringFunc(expr, func(v string) string {
		if val, ok := values[varRE.FindStringSubmatch(v)[1]]; ok {
			return val
		}
		return ".*"
	})
}
