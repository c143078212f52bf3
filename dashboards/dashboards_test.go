package dashboards_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/bargauge"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/heatmap"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/xdslens/xdslens/dashboards"
)

// TestGeneratedFilesUpToDate fails when a committed file differs from what
// the generator produces, or when the generator produces a file that is
// not committed.
func TestGeneratedFilesUpToDate(t *testing.T) {
	files, err := dashboards.Files()
	if err != nil {
		t.Fatal(err)
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		got, err := os.ReadFile(filepath.FromSlash(p))
		if err != nil {
			t.Errorf("%s: %v; run `go generate ./dashboards/...`", p, err)
			continue
		}
		if !bytes.Equal(got, files[p]) {
			t.Errorf("%s differs from what the generator produces; run `go generate ./dashboards/...` and commit the result", p)
		}
	}
}

// TestGeneratorIsDeterministic builds the files twice and compares them,
// so that map iteration order cannot leak into the committed JSON.
func TestGeneratorIsDeterministic(t *testing.T) {
	a, err := dashboards.Files()
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		b, err := dashboards.Files()
		if err != nil {
			t.Fatal(err)
		}
		for p := range a {
			if !bytes.Equal(a[p], b[p]) {
				t.Fatalf("%s differs between two runs of the generator", p)
			}
		}
	}
}

// sdkError turns what the SDK's generated decoders and validators return
// into an error: they return their list of errors as an error even when
// the list is empty.
func sdkError(err error) error {
	var list cog.BuildErrors
	if errors.As(err, &list) && len(list) == 0 {
		return nil
	}
	return err
}

// registerPlugins registers the SDK's decoders for the panel and query
// kinds the dashboards use, so that the strict decoder checks their options
// too. (The SDK's plugins.RegisterDefaultPlugins registers every kind it
// knows and compiles some forty packages more into the tests.)
func registerPlugins() {
	rt := cog.NewRuntime()
	for _, v := range []variants.PanelcfgConfig{
		bargauge.VariantConfig(), heatmap.VariantConfig(), stat.VariantConfig(),
		statetimeline.VariantConfig(), table.VariantConfig(), timeseries.VariantConfig(),
	} {
		rt.RegisterPanelcfgVariant(v)
	}
	rt.RegisterDataqueryVariant(prometheus.VariantConfig())
}

// TestDashboardsUnmarshalStrict reads the committed JSON back with the
// SDK's strict decoder, which rejects unknown fields, and validates it.
func TestDashboardsUnmarshalStrict(t *testing.T) {
	registerPlugins()
	for _, f := range dashboardFiles {
		t.Run(filepath.Base(f), func(t *testing.T) {
			var d dashboard.Dashboard
			if err := sdkError(d.UnmarshalJSONStrict(readFile(t, f))); err != nil {
				t.Fatalf("strict unmarshal: %v", err)
			}
			// A panel of a kind with no decoder registered would have had
			// its options read without the strict check.
			var kinds struct {
				Panels []struct {
					Title, Type string
					Panels      []struct{ Title, Type string }
				}
			}
			if err := json.Unmarshal(readFile(t, f), &kinds); err != nil {
				t.Fatal(err)
			}
			for _, p := range kinds.Panels {
				for _, panel := range append([]struct{ Title, Type string }{{p.Title, p.Type}}, p.Panels...) {
					if _, ok := cog.NewRuntime().ConfigForPanelcfgVariant(panel.Type); !ok && panel.Type != "row" {
						t.Errorf("panel %q is of kind %q, which registerPlugins does not register", panel.Title, panel.Type)
					}
				}
			}
			if err := sdkError(d.Validate()); err != nil {
				t.Fatalf("validate: %v", err)
			}
			if d.Uid == nil || *d.Uid == "" || len(*d.Uid) > 40 {
				t.Errorf("uid %v: want 1 to 40 characters", d.Uid)
			}
		})
	}
}

// TestStrictDecoderRejectsUnknownFields checks that the strict check can
// fail once sdkError has dropped the SDK's empty error lists.
func TestStrictDecoderRejectsUnknownFields(t *testing.T) {
	registerPlugins()
	var d dashboard.Dashboard
	if sdkError(d.UnmarshalJSONStrict([]byte(`{"title": "x", "panelz": []}`))) == nil {
		t.Fatal("the strict decoder accepted an unknown field")
	}
}

// schemaFiles are the dashboard JSON Schemas of grafana-foundation-sdk in
// testdata: v0.0.12's (the one the project's schema checks started from)
// and v0.0.18's (the SDK version the generator uses).
var schemaFiles = []string{"grafana-dashboard.jsonschema.json", "grafana-dashboard-v0.0.18.jsonschema.json"}

// loadSchema compiles one of schemaFiles with the corrections that
// testdata/README.md explains: the SDK's generator turned Grafana's "any
// value" (CUE `_`) into "an object" for override matcher options and
// override values, and v0.0.12 dropped the null of a threshold's `number
// | null` value. Grafana itself writes strings, numbers and arrays there,
// and null for the base threshold.
func loadSchema(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	defs := doc.(map[string]any)["definitions"].(map[string]any)
	prop := func(def, name string) map[string]any {
		return defs[def].(map[string]any)["properties"].(map[string]any)[name].(map[string]any)
	}
	for _, p := range []map[string]any{prop("MatcherConfig", "options"), prop("DynamicConfigValue", "value")} {
		if p["type"] != "object" {
			t.Fatalf("schema changed: %v", p)
		}
		delete(p, "type")
		delete(p, "additionalProperties")
	}
	if v := prop("Threshold", "value"); v["type"] == "number" {
		v["type"] = []any{"number", "null"}
	} else if _, ok := v["anyOf"]; !ok {
		t.Fatalf("schema changed: threshold value %v", v)
	}
	c := jsonschema.NewCompiler()
	const url = "file:///grafana-dashboard.jsonschema.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	return schema
}

// TestDashboardsMatchSchema validates the committed JSON against Grafana's
// dashboard JSON Schema.
func TestDashboardsMatchSchema(t *testing.T) {
	for _, name := range schemaFiles {
		schema := loadSchema(t, name)
		for _, f := range dashboardFiles {
			t.Run(name+"/"+filepath.Base(f), func(t *testing.T) {
				v, err := jsonschema.UnmarshalJSON(bytes.NewReader(readFile(t, f)))
				if err != nil {
					t.Fatal(err)
				}
				if err := schema.Validate(v); err != nil {
					t.Fatalf("%s does not match %s: %v", f, name, err)
				}
			})
		}
	}
}

// TestSchemaRejectsBadDashboards checks that the schema check can fail.
func TestSchemaRejectsBadDashboards(t *testing.T) {
	for _, name := range schemaFiles {
		testSchemaRejects(t, loadSchema(t, name))
	}
}

func testSchemaRejects(t *testing.T, schema *jsonschema.Schema) {
	t.Helper()
	for _, bad := range []string{
		`{"schemaVersion": 42, "templating": {}, "annotations": {}, "panelz": []}`,
		`{"schemaVersion": 42, "templating": {}, "annotations": {}, "panels": [{"type": "timeseries", "gridPos": {"h": "8"}}]}`,
		`{"templating": {}, "annotations": {}}`,
	} {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(bad))
		if err != nil {
			t.Fatal(err)
		}
		if schema.Validate(v) == nil {
			t.Errorf("the schema accepted %s", bad)
		}
	}
}

// TestPanels checks what an operator relies on in every panel: a unique
// id, a title, the datasource variable, queries with a refId and an
// expression, and a description that says what a bad value means and
// what to do.
func TestPanels(t *testing.T) {
	for _, f := range dashboardFiles {
		d := readDashboard(t, f)
		ids := map[int]string{}
		for _, p := range d.Panels {
			if prev, dup := ids[p.ID]; dup || p.ID == 0 {
				t.Errorf("%s: panel %q has id %d, also used by %q", f, p.Title, p.ID, prev)
			}
			ids[p.ID] = p.Title
		}
		titles := map[string]bool{}
		for _, p := range d.panels() {
			name := f + ": " + p.Title
			if p.Title == "" || titles[p.Title] {
				t.Errorf("%s: empty or repeated title", name)
			}
			titles[p.Title] = true
			if !strings.Contains(p.Description, "**Bad**") || !strings.Contains(p.Description, "**Do**") {
				t.Errorf("%s: the description must say what a bad value means (**Bad**) and what to do (**Do**): %q", name, p.Description)
			}
			if !strings.Contains(string(p.Datasource), `"${datasource}"`) {
				t.Errorf("%s: datasource %s, want the ${datasource} variable", name, p.Datasource)
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s: no queries", name)
			}
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				if tg.RefID == "" || refs[tg.RefID] || tg.Expr == "" {
					t.Errorf("%s: query %+v needs a unique refId and an expression", name, tg)
				}
				refs[tg.RefID] = true
			}
		}
	}
}

// TestVariables checks that both dashboards have the variables the panels
// use.
func TestVariables(t *testing.T) {
	want := []string{"datasource", "job", "instance", "target", "server", "resource_type", "authority"}
	for _, f := range dashboardFiles {
		var got []string
		for _, v := range readDashboard(t, f).Templating.List {
			got = append(got, v.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: variables %v, want %v", f, got, want)
		}
		for _, q := range allPanelQueries(t) {
			for _, m := range varRE.FindAllStringSubmatch(q.expr, -1) {
				if v := m[1]; !strings.HasPrefix(v, "__") && !slices.Contains(want, v) {
					t.Errorf("%s uses the undefined variable $%s", q.name(), v)
				}
			}
		}
	}
}

// seriesLabels are the labels each series carries, after OpenTelemetry's
// translation and Prometheus's scrape (job, instance).
var seriesLabels = map[string][]string{
	dashboards.MetricConnected:                      {dashboards.LabelTarget, dashboards.LabelServer},
	dashboards.MetricServerFailures:                 {dashboards.LabelTarget, dashboards.LabelServer},
	dashboards.MetricUpdatesValid:                   {dashboards.LabelTarget, dashboards.LabelServer, dashboards.LabelResourceType},
	dashboards.MetricUpdatesInvalid:                 {dashboards.LabelTarget, dashboards.LabelServer, dashboards.LabelResourceType},
	dashboards.MetricResources:                      {dashboards.LabelTarget, dashboards.LabelAuthority, dashboards.LabelCacheState, dashboards.LabelResourceType},
	dashboards.MetricFetchDuration + "_bucket":      {dashboards.LabelTarget, dashboards.LabelServer, dashboards.LabelResourceType, dashboards.LabelOutcome, "le"},
	dashboards.MetricFetchDuration + "_count":       {dashboards.LabelTarget, dashboards.LabelServer, dashboards.LabelResourceType, dashboards.LabelOutcome},
	dashboards.MetricFetchDuration + "_sum":         {dashboards.LabelTarget, dashboards.LabelServer, dashboards.LabelResourceType, dashboards.LabelOutcome},
	dashboards.MetricAuthorityServer:                {dashboards.LabelTarget, dashboards.LabelAuthority, dashboards.LabelServer, dashboards.LabelPriority},
	dashboards.MetricWatcherNotifications:           {dashboards.LabelTarget, dashboards.LabelResourceType, dashboards.LabelKind},
	dashboards.MetricStreamsStarted:                 {dashboards.LabelTarget, dashboards.LabelServer},
	dashboards.MetricStreamsEnded:                   {dashboards.LabelTarget, dashboards.LabelServer, dashboards.LabelResponseReceived},
	dashboards.MetricStreamsStartFailed:             {dashboards.LabelTarget, dashboards.LabelServer},
	dashboards.MetricFetches:                        {dashboards.LabelTarget, dashboards.LabelServer, dashboards.LabelResourceType, dashboards.LabelOutcome},
	dashboards.MetricLRSReports:                     {dashboards.LabelTarget, dashboards.LabelServer},
	dashboards.MetricLRSCalls:                       {dashboards.LabelTarget, dashboards.LabelServer, dashboards.LabelKind},
	dashboards.MetricLRSStreamsStarted:              {dashboards.LabelTarget, dashboards.LabelServer},
	dashboards.MetricLRSStreamsEnded:                {dashboards.LabelTarget, dashboards.LabelServer, dashboards.LabelResponseReceived},
	dashboards.MetricLRSStreamsStartFailed:          {dashboards.LabelTarget, dashboards.LabelServer},
	dashboards.MetricLRSStreamFailures:              {dashboards.LabelTarget, dashboards.LabelServer},
	dashboards.MetricDataPlanePicks:                 {dashboards.LabelTarget, dashboards.LabelChannelTarget, dashboards.LabelBackendService, dashboards.LabelOutcome},
	dashboards.MetricDataPlaneCalls:                 {dashboards.LabelTarget, dashboards.LabelChannelTarget, dashboards.LabelBackendService, dashboards.LabelLeafCluster, dashboards.LabelStatus},
	dashboards.MetricDataPlaneDrops:                 {dashboards.LabelTarget, dashboards.LabelChannelTarget, dashboards.LabelLeafCluster, dashboards.LabelCategory},
	dashboards.MetricDataPlaneConfigs:               {dashboards.LabelTarget, dashboards.LabelChannelTarget, dashboards.LabelResult},
	dashboards.MetricDataPlaneInFlight:              {dashboards.LabelTarget, dashboards.LabelLeafCluster, dashboards.LabelEDSService},
	dashboards.MetricDataPlaneMaxRequests:           {dashboards.LabelTarget, dashboards.LabelLeafCluster, dashboards.LabelEDSService},
	dashboards.MetricDataPlaneEjections:             {dashboards.LabelTarget, dashboards.LabelChannelTarget, dashboards.LabelBackendService, dashboards.LabelAlgorithm},
	dashboards.MetricDataPlaneEjectedEndpoints:      {dashboards.LabelTarget, dashboards.LabelChannelTarget, dashboards.LabelBackendService},
	dashboards.MetricDataPlaneOutlierEndpoints:      {dashboards.LabelTarget, dashboards.LabelChannelTarget, dashboards.LabelBackendService},
	dashboards.MetricDataPlaneRetries:               {dashboards.LabelTarget, dashboards.LabelChannelTarget, dashboards.LabelBackendService, dashboards.LabelStatus},
	dashboards.MetricDataPlaneFaults:                {dashboards.LabelTarget, dashboards.LabelChannelTarget, dashboards.LabelBackendService, dashboards.LabelFault},
	dashboards.RecordConnected:                      {dashboards.LabelTarget, dashboards.LabelServer},
	dashboards.RecordResources:                      {dashboards.LabelTarget, dashboards.LabelAuthority, dashboards.LabelCacheState, dashboards.LabelResourceType},
	dashboards.RecordAuthorityServer:                {dashboards.LabelTarget, dashboards.LabelAuthority, dashboards.LabelServer, dashboards.LabelPriority},
	dashboards.RecordInFlight:                       {dashboards.LabelTarget, dashboards.LabelLeafCluster, dashboards.LabelEDSService},
	dashboards.RecordMaxRequests:                    {dashboards.LabelTarget, dashboards.LabelLeafCluster, dashboards.LabelEDSService},
	dashboards.MetricPickFirstAttemptsSucceeded:     {dashboards.LabelTarget, dashboards.LabelChannelTarget, dashboards.LabelBackendService, dashboards.LabelLocality},
	dashboards.MetricPickFirstAttemptsFailed:        {dashboards.LabelTarget, dashboards.LabelChannelTarget, dashboards.LabelBackendService, dashboards.LabelLocality},
	dashboards.MetricPickFirstDisconnections:        {dashboards.LabelTarget, dashboards.LabelChannelTarget, dashboards.LabelBackendService, dashboards.LabelLocality},
	dashboards.MetricWRREndpointWeights + "_bucket": {dashboards.LabelTarget, dashboards.LabelChannelTarget, dashboards.LabelBackendService, dashboards.LabelLocality, "le"},
	dashboards.MetricWRRRRFallback:                  {dashboards.LabelTarget, dashboards.LabelChannelTarget, dashboards.LabelBackendService, dashboards.LabelLocality},
	dashboards.MetricAttemptDuration + "_bucket":    {dashboards.LabelTarget, dashboards.LabelMethod, dashboards.LabelStatus, dashboards.LabelBackendService, dashboards.LabelLocality, "le"},
	dashboards.MetricAttemptDuration + "_count":     {dashboards.LabelTarget, dashboards.LabelMethod, dashboards.LabelStatus, dashboards.LabelBackendService, dashboards.LabelLocality},
	"up":                                       {},
	dashboards.MetricServerServing:             {dashboards.LabelAddress, dashboards.LabelListener},
	dashboards.RecordServerServing:             {dashboards.LabelAddress, dashboards.LabelListener},
	dashboards.MetricServerModeChanges:         {dashboards.LabelAddress, dashboards.LabelMode},
	dashboards.MetricServerConnections:         {dashboards.LabelAddress, dashboards.LabelFilterChain},
	dashboards.MetricServerConnectionsAccepted: {dashboards.LabelAddress, dashboards.LabelFilterChain},
	dashboards.MetricServerConnectionsRefused:  {dashboards.LabelAddress, dashboards.LabelReason},
	dashboards.MetricServerConnectionsDrained:  {dashboards.LabelAddress, dashboards.LabelFilterChain, dashboards.LabelReason},
	dashboards.MetricServerHandshakeFailures:   {dashboards.LabelAddress, dashboards.LabelFilterChain},
	dashboards.MetricServerDrainForcedCloses:   {dashboards.LabelAddress, dashboards.LabelFilterChain, dashboards.LabelReason},
	dashboards.MetricServerRBACDecisions:       {dashboards.LabelAddress, dashboards.LabelFilterChain, dashboards.LabelRBACFilter, dashboards.LabelRBACPolicy, dashboards.LabelRBACDecision},
}

// scrapeLabels are added to every series by Prometheus or the exporter.
var scrapeLabels = []string{"job", "instance", "otel_scope_name", "otel_scope_version"}

// TestAlertRules checks each alert: a summary, a description that names
// the labels locating the problem, a severity, a runbook URL and a section
// in RUNBOOK.md.
func TestAlertRules(t *testing.T) {
	runbook := string(readFile(t, "RUNBOOK.md"))
	want := []string{
		dashboards.AlertScrapeFailed, dashboards.AlertJobAbsent,
		dashboards.AlertServerDisconnected, dashboards.AlertServerFlapping,
		dashboards.AlertResourcesNACKed, dashboards.AlertResourcesDoesNotExist,
		dashboards.AlertResourcesError, dashboards.AlertOnFallback,
		dashboards.AlertFetchLatencyHigh, dashboards.AlertLoadReportingFailing,
		dashboards.AlertRPCsFailing, dashboards.AlertBackendErrors, dashboards.AlertRPCsDropped,
		dashboards.AlertCircuitBreaking, dashboards.AlertNearMaxRequests, dashboards.AlertEndpointsEjected,
		dashboards.AlertServerNotServing, dashboards.AlertServerHandshakeFailures, dashboards.AlertServerGoAwayIgnored, dashboards.AlertServerDenialSpike,
	}
	var got []string
	o := dashboards.DefaultAlertOptions()
	o.JobSelector = `job="payments"`
	for _, g := range []dashboards.RuleGroup{dashboards.AlertRules(o)} {
		for _, r := range g.Rules {
			got = append(got, r.Alert)
			if r.Summary == "" || r.Severity == "" {
				t.Errorf("%s: summary %q severity %q", r.Alert, r.Summary, r.Severity)
			}
			// The scrape alerts are about a process, or a job with no
			// process: there is no client to name.
			locate := []string{"grpc_target", "instance", "job"}
			switch r.Alert {
			case dashboards.AlertScrapeFailed:
				locate = []string{"instance", "job"}
			case dashboards.AlertJobAbsent:
				locate = []string{"job"}
			case dashboards.AlertServerNotServing, dashboards.AlertServerHandshakeFailures, dashboards.AlertServerGoAwayIgnored, dashboards.AlertServerDenialSpike:
				// A server's address, not a client.
				locate = []string{"xdslens_address", "instance", "job"}
			}
			for _, l := range locate {
				if !strings.Contains(r.Description, "$labels."+l) {
					t.Errorf("%s: the description does not name the %s label: %q", r.Alert, l, r.Description)
				}
			}
			if !strings.HasSuffix(r.RunbookURL, "#"+strings.ToLower(r.Alert)) {
				t.Errorf("%s: runbook URL %q", r.Alert, r.RunbookURL)
			}
			if !regexp.MustCompile(`(?m)^## ` + r.Alert + `$`).MatchString(runbook) {
				t.Errorf("%s: no \"## %s\" section in RUNBOOK.md", r.Alert, r.Alert)
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("alerts %v, want %v", got, want)
	}
}

// TestPromDuration checks the durations written into rules.
func TestPromDuration(t *testing.T) {
	o := dashboards.DefaultAlertOptions()
	o.FlapWindow = 90 * 60e9
	for _, r := range dashboards.AlertRules(o).Rules {
		if r.Alert == dashboards.AlertServerFlapping && !strings.Contains(r.Expr, "[1h30m]") {
			t.Errorf("flap window 90m written as %q", r.Expr)
		}
	}
}
