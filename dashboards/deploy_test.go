package dashboards_test

// Tests of the files that deploy the rules and dashboards: the Kubernetes
// objects against the CRD schemas of the Prometheus Operator, the
// monitoring mixin with jsonnet and promtool, and the scrape configuration
// with promtool.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/xdslens/xdslens/dashboards"
)

// fromYAML decodes the YAML document b into the values encoding/json
// would give for the same document in JSON.
func fromYAML(t *testing.T, name string, b []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out
}

// crd is the schema of a CustomResourceDefinition's served version.
type crd struct {
	schema     *jsonschema.Schema
	apiVersion string
	kind       string
}

// loadCRD compiles the openAPIV3Schema of the one version that
// testdata/crds/file serves (the Prometheus Operator's CRDs; see
// testdata/README.md).
func loadCRD(t *testing.T, file string) crd {
	t.Helper()
	var def struct {
		Spec struct {
			Group string `json:"group"`
			Names struct {
				Kind string `json:"kind"`
			} `json:"names"`
			Versions []struct {
				Name   string `json:"name"`
				Served bool   `json:"served"`
				Schema struct {
					OpenAPIV3Schema json.RawMessage `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(readFile(t, "testdata/crds/"+file), &def); err != nil {
		t.Fatal(err)
	}
	if len(def.Spec.Versions) != 1 || !def.Spec.Versions[0].Served {
		t.Fatalf("%s: want one served version, have %+v", file, def.Spec.Versions)
	}
	v := def.Spec.Versions[0]
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(v.Schema.OpenAPIV3Schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	url := "file:///" + file
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return crd{schema, def.Spec.Group + "/" + v.Name, def.Spec.Names.Kind}
}

// kubernetesObjects are the generated objects and their CRDs.
var kubernetesObjects = map[string]string{
	dashboards.PrometheusRuleFile: "prometheusrules-crd.json",
	dashboards.PodMonitorFile:     "podmonitors-crd.json",
	dashboards.ServiceMonitorFile: "servicemonitors-crd.json",
}

// TestKubernetesObjectsMatchCRDs validates each Kubernetes object against
// the schema of its CRD, with the apiVersion and kind the CRD serves.
func TestKubernetesObjectsMatchCRDs(t *testing.T) {
	for file, crdFile := range kubernetesObjects {
		c := loadCRD(t, crdFile)
		obj := fromYAML(t, file, readFile(t, file))
		if err := c.schema.Validate(obj); err != nil {
			t.Errorf("%s does not match %s: %v", file, crdFile, err)
		}
		m := obj.(map[string]any)
		if m["apiVersion"] != c.apiVersion || m["kind"] != c.kind {
			t.Errorf("%s: %v %v, want %s %s", file, m["apiVersion"], m["kind"], c.apiVersion, c.kind)
		}
		if name, _ := m["metadata"].(map[string]any)["name"].(string); name == "" {
			t.Errorf("%s: no metadata.name", file)
		}
	}
}

// TestCRDSchemasRejectBadObjects checks that the CRD schemas can fail: a
// rule group without a name, a for that is not a duration, an endpoint
// port that is a number, a selector that is a string; each beside the
// same object made right, which passes.
func TestCRDSchemasRejectBadObjects(t *testing.T) {
	for _, tc := range []struct{ crd, bad, good string }{
		{"prometheusrules-crd.json",
			`{"spec": {"groups": [{"rules": []}]}}`,
			`{"spec": {"groups": [{"name": "g", "rules": []}]}}`},
		{"prometheusrules-crd.json",
			`{"spec": {"groups": [{"name": "g", "rules": [{"alert": "A", "for": "5 minutes", "expr": "up"}]}]}}`,
			`{"spec": {"groups": [{"name": "g", "rules": [{"alert": "A", "for": "5m", "expr": "up"}]}]}}`},
		{"podmonitors-crd.json",
			`{"spec": {"selector": {}, "podMetricsEndpoints": [{"port": 9464}]}}`,
			`{"spec": {"selector": {}, "podMetricsEndpoints": [{"port": "metrics"}]}}`},
		{"servicemonitors-crd.json",
			`{"spec": {"selector": "app=x", "endpoints": [{"port": "metrics"}]}}`,
			`{"spec": {"selector": {"matchLabels": {"app": "x"}}, "endpoints": [{"port": "metrics"}]}}`},
	} {
		schema := loadCRD(t, tc.crd).schema
		for _, obj := range []string{tc.bad, tc.good} {
			v, err := jsonschema.UnmarshalJSON(strings.NewReader(obj))
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(v); (err == nil) != (obj == tc.good) {
				t.Errorf("%s on %s: %v", tc.crd, obj, err)
			}
		}
	}
}

// TestPrometheusRuleHasTheRules checks that the PrometheusRule carries the
// rule file's groups, and the mixin's two files its alerts and records.
func TestPrometheusRuleHasTheRules(t *testing.T) {
	groups := func(file string) []any {
		t.Helper()
		v := fromYAML(t, file, readFile(t, file)).(map[string]any)
		if spec, ok := v["spec"].(map[string]any); ok {
			v = spec
		}
		g, _ := v["groups"].([]any)
		return g
	}
	all := groups(dashboards.RulesFile)
	if len(all) != 2 {
		t.Fatalf("%s: %d groups, want 2 (records, alerts)", dashboards.RulesFile, len(all))
	}
	for file, want := range map[string][]any{
		dashboards.PrometheusRuleFile: all,
		dashboards.MixinRulesFile:     all[:1],
		dashboards.MixinAlertsFile:    all[1:],
	} {
		if got := groups(file); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: groups differ from those of %s", file, dashboards.RulesFile)
		}
	}
}

// TestMixinRulesPromtool runs `promtool check rules` on the mixin's rule
// files.
func TestMixinRulesPromtool(t *testing.T) {
	tool := promtool(t)
	for _, f := range []string{dashboards.MixinAlertsFile, dashboards.MixinRulesFile} {
		if out, err := exec.Command(tool, "check", "rules", filepath.FromSlash(f)).CombinedOutput(); err != nil {
			t.Errorf("promtool check rules %s: %v\n%s", f, err, out)
		}
	}
}

// TestMixinJsonnet evaluates mixin.libsonnet with jsonnet (Debian's
// jsonnet package; .ci/run installs it) and checks that its three objects
// are the alerts, records and dashboards of the files beside it.
func TestMixinJsonnet(t *testing.T) {
	tool, err := exec.LookPath("jsonnet")
	if err != nil {
		t.Skip("jsonnet not found: install Debian's jsonnet package (.ci/run does)")
	}
	dir := filepath.FromSlash(path.Dir(dashboards.MixinFile))
	out, err := exec.Command(tool, "-J", dir, "-e",
		`local m = import "`+path.Base(dashboards.MixinFile)+`"; {alerts: m.prometheusAlerts, rules: m.prometheusRules, dashboards: m.grafanaDashboards}`).Output()
	if err != nil {
		t.Fatalf("jsonnet: %v\n%s", err, out)
	}
	var got struct {
		Alerts, Rules any
		Dashboards    map[string]any
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	asJSON := func(name string, v any) any {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var out any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return out
	}
	for file, v := range map[string]any{dashboards.MixinAlertsFile: got.Alerts, dashboards.MixinRulesFile: got.Rules} {
		if want := asJSON(file, fromYAML(t, file, readFile(t, file))); !reflect.DeepEqual(asJSON(file, v), want) {
			t.Errorf("the mixin's object differs from %s", file)
		}
	}
	if len(got.Dashboards) != len(dashboardFiles) {
		t.Errorf("the mixin has %d dashboards, want %d", len(got.Dashboards), len(dashboardFiles))
	}
	for _, f := range dashboardFiles {
		out := path.Join(dashboards.MixinDashboardsDir, path.Base(f))
		var want any
		if err := json.Unmarshal(readFile(t, out), &want); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(readFile(t, out), readFile(t, f)) {
			t.Errorf("%s differs from %s", out, f)
		}
		if !reflect.DeepEqual(asJSON(out, got.Dashboards[path.Base(f)]), want) {
			t.Errorf("the mixin's dashboard %s differs from %s", path.Base(f), out)
		}
	}
}

// TestScrapeConfig runs `promtool check config` on the scrape
// configuration, with the rule file and a targets file beside it as it
// says, and checks that it loads the rule file and reads the targets file.
func TestScrapeConfig(t *testing.T) {
	cfg := fromYAML(t, dashboards.ScrapeConfigFile, readFile(t, dashboards.ScrapeConfigFile)).(map[string]any)
	if got := cfg["rule_files"]; !reflect.DeepEqual(got, []any{path.Base(dashboards.RulesFile)}) {
		t.Errorf("rule_files %v, want %s", got, path.Base(dashboards.RulesFile))
	}
	jobs, _ := cfg["scrape_configs"].([]any)
	if len(jobs) != 1 {
		t.Fatalf("%d scrape configs, want 1", len(jobs))
	}
	job := jobs[0].(map[string]any)
	sd := job["file_sd_configs"].([]any)[0].(map[string]any)
	if job["job_name"] != dashboards.ScrapeJob || !reflect.DeepEqual(sd["files"], []any{dashboards.TargetsFile}) {
		t.Errorf("scrape config %v, want job %s reading %s", job, dashboards.ScrapeJob, dashboards.TargetsFile)
	}

	tool := promtool(t)
	dir := t.TempDir()
	for _, f := range []string{dashboards.ScrapeConfigFile, dashboards.RulesFile} {
		if err := os.WriteFile(filepath.Join(dir, path.Base(f)), readFile(t, f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, dashboards.TargetsFile), []byte(`[{"targets": ["127.0.0.1:9464"]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "check", "config", filepath.Join(dir, path.Base(dashboards.ScrapeConfigFile))).CombinedOutput()
	if err != nil || bytes.Contains(out, []byte("WARNING")) {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
}
