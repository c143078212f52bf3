package xdswatch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/testing/promtest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// metricsScenario runs xdswatch with --metrics-addr on port 0 against a
// scripted ADS server, watching cds c1 and c2: the first ADS stream ends
// before any response (a server failure), the second delivers a valid c1
// and an invalid c2. It returns the process, the bound metrics address and
// the xDS server's address, once xdswatch has printed the callbacks of
// that response.
func metricsScenario(t *testing.T) (p *proc, metricsAddr, xdsServer string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := xdstest.NewADSServer(t)
	bootstrapFile := filepath.Join(t.TempDir(), "bootstrap.json")
	bs := fmt.Sprintf(`{"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}]}], "node": {"id": %q}}`, srv.Addr(), testNodeID)
	if err := os.WriteFile(bootstrapFile, []byte(bs), 0o600); err != nil {
		t.Fatal(err)
	}
	p = startRun(t, "--bootstrap", bootstrapFile, "--output", "json", "--metrics-addr", "127.0.0.1:0", "cds:c1", "cds:c2")
	l := p.event(t)
	if l.Event != eventListening || l.Metrics == nil || !strings.HasPrefix(*l.Metrics, "127.0.0.1:") || strings.HasSuffix(*l.Metrics, ":0") {
		t.Fatalf("first line %+v, want listening with the bound metrics address", l)
	}

	cds := xdsresource.ClusterType.TypeURL()
	st, err := srv.NextStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecvType(ctx, cds); err != nil {
		t.Fatal(err)
	}
	st.End(status.Error(codes.Unavailable, "scripted failure"))
	for range 2 {
		if e := p.event(t); e.Event != eventResourceError || e.Code != "UNAVAILABLE" {
			t.Fatalf("got %v, want an UNAVAILABLE resource error", e)
		}
	}
	if st, err = srv.NextStream(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecvType(ctx, cds); err != nil {
		t.Fatal(err)
	}
	invalid := &clusterv3.Cluster{Name: "c2", ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}}
	if err := st.Send(xdstest.Response(cds, "1", controlplane.Cluster("c1", "c1"), invalid)); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for range 2 {
		e := p.event(t)
		got[e.Event+" "+e.Name+" "+e.Code] = true
	}
	if !got[eventResource+" c1 "] || !got[eventResourceError+" c2 INVALID_ARGUMENT"] {
		t.Fatalf("events %v, want resource c1 and an INVALID_ARGUMENT resource_error for c2", got)
	}
	return p, *l.Metrics, srv.Addr()
}

// expectedSeries are the five gRFC A78 series after metricsScenario, by
// Prometheus name, with the labels that identify them.
func expectedSeries(xdsServer string) []struct {
	name   string
	labels map[string]string
	value  float64
} {
	const cluster = "envoy.config.cluster.v3.Cluster"
	srv := map[string]string{"grpc_target": "xdswatch", "grpc_xds_server": xdsServer}
	typ := map[string]string{"grpc_target": "xdswatch", "grpc_xds_server": xdsServer, "grpc_xds_resource_type": cluster}
	res := func(state string) map[string]string {
		return map[string]string{"grpc_target": "xdswatch", "grpc_xds_authority": "#old", "grpc_xds_cache_state": state, "grpc_xds_resource_type": cluster}
	}
	return []struct {
		name   string
		labels map[string]string
		value  float64
	}{
		{"grpc_xds_client_connected", srv, 1},
		{"grpc_xds_client_server_failure_total", srv, 1},
		{"grpc_xds_client_resource_updates_valid_total", typ, 1},
		{"grpc_xds_client_resource_updates_invalid_total", typ, 1},
		{"grpc_xds_client_resources", res("acked"), 1},
		{"grpc_xds_client_resources", res("nacked"), 1},
	}
}

// selector renders a PromQL series selector.
func selector(name string, labels map[string]string) string {
	var ms []string
	for k, v := range labels {
		ms = append(ms, fmt.Sprintf("%s=%q", k, v))
	}
	return name + "{" + strings.Join(ms, ",") + "}"
}

// poll calls check every tick until it returns "" or the deadline passes,
// and returns its last complaint. The process it observes tells nothing
// when its state changes, hence the ticker.
func poll(deadline time.Duration, check func() string) string {
	timeout := time.NewTimer(deadline)
	defer timeout.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		msg := check()
		if msg == "" {
			return ""
		}
		select {
		case <-tick.C:
		case <-timeout.C:
			return msg
		}
	}
}

// TestMetrics scrapes xdswatch's /metrics directly.
func TestMetrics(t *testing.T) {
	t.Parallel()
	p, addr, xdsServer := metricsScenario(t)
	if msg := poll(testTimeout, func() string {
		body, err := scrape(addr)
		if err != nil {
			return err.Error()
		}
		for _, want := range expectedSeries(xdsServer) {
			if !hasSample(body, want.name, want.labels, want.value) {
				return fmt.Sprintf("no sample %s %v in\n%s", selector(want.name, want.labels), want.value, body)
			}
		}
		return ""
	}); msg != "" {
		t.Fatal(msg)
	}
	p.interrupt(t)
}

// hasSample reports whether the text exposition body has a sample of name
// whose labels include labels, with value.
func hasSample(body, name string, labels map[string]string, value float64) bool {
	return slices.Contains(sampleValues(body, name, labels), value)
}

// TestMetricsPrometheus lets a real Prometheus scrape xdswatch every
// second and checks, through Prometheus's HTTP API, that each of the five
// gRFC A78 series exists with the expected labels and value.
func TestMetricsPrometheus(t *testing.T) {
	t.Parallel() // waits on Prometheus's scrapes
	bin := promtest.Binary(t)
	p, addr, xdsServer := metricsScenario(t)
	prom := promtest.Run(t, bin, t.TempDir(), func(string) string {
		return fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: xdswatch\n    static_configs:\n      - targets: [%q]\n", addr)
	})

	for _, want := range expectedSeries(xdsServer) {
		q := selector(want.name, want.labels)
		prom.WaitUntil(t, fmt.Sprintf("one sample of job xdswatch with value %v", want.value), q, func(got []promtest.Sample) bool {
			return len(got) == 1 && got[0].Float() == want.value && got[0].Metric["job"] == "xdswatch"
		})
	}
	// The metrics carry no state beyond the five series' labels: every
	// series of resources is one of the two expected.
	all, err := prom.Query(`grpc_xds_client_resources{job="xdswatch"}`)
	if err != nil || len(all) != 2 {
		t.Errorf("grpc_xds_client_resources: %+v, %v; want the acked and the nacked series only", all, err)
	}
	p.interrupt(t)
}

// TestDemoLoadReport: the demo reports the load of its LRS cluster to the
// demo server, whose LRS service answers; the stream shows in the
// xdslens.xds_client.lrs_* metrics.
func TestDemoLoadReport(t *testing.T) {
	t.Parallel()
	p, addr := startDemoMetrics(t, cleanEnv())
	if msg := poll(testTimeout, func() string {
		body, err := scrape(addr)
		if err != nil {
			return err.Error()
		}
		if !hasSample(body, "xdslens_xds_client_lrs_streams_started_total", map[string]string{"grpc_target": "xdswatch"}, 1) {
			return fmt.Sprintf("no LRS stream started in\n%s", body)
		}
		return ""
	}); msg != "" {
		t.Fatal(msg)
	}
	p.interrupt(t)
}

// startDemoMetrics runs the demo in JSON mode with env and args, serving
// its metrics on a loopback port, and returns the process and the metrics
// address from its listening line.
func startDemoMetrics(t *testing.T, env []string, args ...string) (*proc, string) {
	t.Helper()
	p := startProc(t, env, append([]string{"--output", "json", "--metrics-addr", "127.0.0.1:0"}, args...)...)
	var l struct{ Metrics string }
	if err := json.Unmarshal([]byte(p.line(t)), &l); err != nil || l.Metrics == "" {
		t.Fatalf("listening line: %v, metrics %q", err, l.Metrics)
	}
	return p, l.Metrics
}

// scrape returns the body of the /metrics page at addr.
func scrape(addr string) (string, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// TestMetricsServiceName: target_info on /metrics carries the OpenTelemetry
// service.name: "xdswatch" by default, OTEL_SERVICE_NAME when set, and
// --service-name above both.
func TestMetricsServiceName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"default", nil, nil, "xdswatch"},
		{"environment", []string{"OTEL_SERVICE_NAME=from-env"}, nil, "from-env"},
		{"flag", []string{"OTEL_SERVICE_NAME=from-env"}, []string{"--service-name", "payments-xds"}, "payments-xds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var env []string
			for _, kv := range cleanEnv(tc.env...) {
				if !strings.HasPrefix(kv, "OTEL_") || slices.Contains(tc.env, kv) {
					env = append(env, kv)
				}
			}
			p, addr := startDemoMetrics(t, env, tc.args...)
			if msg := poll(testTimeout, func() string {
				body, err := scrape(addr)
				if err != nil {
					return err.Error()
				}
				if !hasSample(body, "target_info", map[string]string{"service_name": tc.want}, 1) {
					return fmt.Sprintf("no target_info with service_name %q in\n%s", tc.want, body)
				}
				return ""
			}); msg != "" {
				t.Fatal(msg)
			}
			p.interrupt(t)
		})
	}
}

// sampleValues returns the values of the samples of name in the text
// exposition body whose labels include labels, in order.
func sampleValues(body, name string, labels map[string]string) []float64 {
	var out []float64
	for _, line := range strings.Split(body, "\n") {
		rest, ok := strings.CutPrefix(line, name+"{")
		if !ok {
			continue
		}
		match := true
		for k, v := range labels {
			if !strings.Contains(rest, fmt.Sprintf("%s=%q", k, v)) {
				match = false
			}
		}
		i := strings.LastIndex(rest, "} ")
		var v float64
		if match && i >= 0 {
			if _, err := fmt.Sscan(rest[i+2:], &v); err == nil {
				out = append(out, v)
			}
		}
	}
	return out
}

// sampleValue returns the value of the first sample of name in body whose
// labels include labels.
func sampleValue(body, name string, labels map[string]string) (float64, bool) {
	if vs := sampleValues(body, name, labels); len(vs) > 0 {
		return vs[0], true
	}
	return 0, false
}

// TestDataPlaneMetrics: the demo with RPCs through xds:///demo and through
// a listener the demo does not serve exports the data-plane series on
// /metrics (package telemetry/dataplane on each channel), beside the
// clients' series: RPCs sent to the demo's cluster and answered OK, its
// config counted, its max_requests, and for the absent listener a failed
// config and the RPCs it failed, every series with the grpc.target of the
// xDS client (--target) and the channel's own. A closed channel reports
// nothing more.
func TestDataPlaneMetrics(t *testing.T) {
	t.Parallel()
	p, addr := startDemoMetrics(t, cleanEnv(), "--stdin", "--resource-timeout", "1s", "--rpc-interval", "20ms", "--rpc-timeout", "200ms",
		"xds:///demo", "xds:///absent")
	// Every series has the target of the client the channels share, as
	// the client's own series do, and the channel's series its own target.
	demo := map[string]string{"grpc_target": "xdswatch", "xdslens_channel_target": "xds:///demo"}
	absent := map[string]string{"grpc_target": "xdswatch", "xdslens_channel_target": "xds:///absent"}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := maps.Clone(base)
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	atLeast := []struct {
		name   string
		labels map[string]string
		min    float64
	}{
		{"xdslens_data_plane_picks_total", with(demo, "grpc_lb_backend_service", "demo-cluster", "outcome", "sent"), 2},
		{"xdslens_data_plane_picks_total", with(demo, "grpc_lb_backend_service", "demo-cluster", "outcome", "no_endpoint"), 0},
		{"xdslens_data_plane_calls_total", with(demo, "grpc_lb_backend_service", "demo-cluster", "xdslens_leaf_cluster", "demo-cluster", "grpc_status", "OK"), 2},
		{"xdslens_data_plane_config_updates_total", with(demo, "result", "config"), 1},
		{"xdslens_data_plane_config_updates_total", with(demo, "result", "error"), 0},
		// The circuit breaker of the demo's cluster, in the client of
		// --target that every channel shares: the default max_requests.
		{"xdslens_data_plane_max_requests", map[string]string{"grpc_target": "xdswatch", "xdslens_leaf_cluster": "demo-cluster"}, 1024},
		{"xdslens_data_plane_in_flight", map[string]string{"grpc_target": "xdswatch", "xdslens_leaf_cluster": "demo-cluster"}, 0},
		{"xdslens_data_plane_config_updates_total", with(absent, "result", "error"), 1},
		{"xdslens_data_plane_picks_total", with(absent, "grpc_lb_backend_service", "", "outcome", "config_error"), 1},
		// The clients' metrics are on the same page.
		{"grpc_xds_client_connected", map[string]string{"grpc_target": "xdswatch"}, 1},
	}
	var body string
	if msg := poll(testTimeout, func() string {
		var err error
		if body, err = scrape(addr); err != nil {
			return err.Error()
		}
		for _, w := range atLeast {
			if v, ok := sampleValue(body, w.name, w.labels); !ok || v < w.min {
				return fmt.Sprintf("no sample %s >= %v in\n%s", selector(w.name, w.labels), w.min, body)
			}
		}
		return ""
	}); msg != "" {
		t.Fatal(msg)
	}
	// Closing the demo's channel detaches its metrics: its counters stop.
	p.send(t, "-xds:///demo")
	sent := with(demo, "grpc_lb_backend_service", "demo-cluster", "outcome", "sent")
	var last float64
	if msg := poll(testTimeout, func() string {
		var err error
		if body, err = scrape(addr); err != nil {
			return err.Error()
		}
		v, _ := sampleValue(body, "xdslens_data_plane_picks_total", sent)
		if v != last {
			last = v
			return fmt.Sprintf("picks still rising after the channel closed: %v", v)
		}
		return ""
	}); msg != "" {
		t.Fatal(msg)
	}
	p.interrupt(t)
}
