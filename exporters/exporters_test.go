package exporters_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/exporters"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
)

// scrape gets url and parses the Prometheus text format.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: parsing the text format: %v", url, err)
	}
	return families
}

// value returns the value of the sample of family whose labels include
// want, and whether there is one.
func value(f *dto.MetricFamily, want map[string]string) (float64, bool) {
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			if got[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue(), true
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue(), true
		case m.GetHistogram() != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

func TestPrometheus(t *testing.T) {
	ctx := testContext(t)
	p, err := exporters.Prometheus()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(ctx)
	server := scenario(t, p)
	addr, stop, err := exporters.ServePrometheus(ctx, "127.0.0.1:0", p.Handler)
	if err != nil {
		t.Fatal(err)
	}
	defer stop(ctx)

	families := scrape(t, "http://"+addr+"/metrics")
	srv := map[string]string{"grpc_target": testTarget, "grpc_xds_server": server}
	typ := map[string]string{"grpc_target": testTarget, "grpc_xds_server": server, "grpc_xds_resource_type": "envoy.config.cluster.v3.Cluster"}
	res := func(state string) map[string]string {
		return map[string]string{"grpc_target": testTarget, "grpc_xds_authority": "#old",
			"grpc_xds_cache_state": state, "grpc_xds_resource_type": "envoy.config.cluster.v3.Cluster"}
	}
	for _, want := range []struct {
		name   string
		kind   dto.MetricType
		labels map[string]string
		value  float64
	}{
		{"grpc_xds_client_connected", dto.MetricType_GAUGE, srv, 1},
		{"grpc_xds_client_server_failure_total", dto.MetricType_COUNTER, srv, 1},
		{"grpc_xds_client_resource_updates_valid_total", dto.MetricType_COUNTER, typ, 1},
		{"grpc_xds_client_resource_updates_invalid_total", dto.MetricType_COUNTER, typ, 1},
		{"grpc_xds_client_resources", dto.MetricType_GAUGE, res("acked"), 1},
		{"grpc_xds_client_resources", dto.MetricType_GAUGE, res("nacked"), 1},
		{"xdslens_xds_client_resource_fetch_duration_seconds", dto.MetricType_HISTOGRAM,
			map[string]string{"grpc_target": testTarget, "grpc_xds_server": server, "grpc_xds_resource_type": "envoy.config.cluster.v3.Cluster", "outcome": "acked"}, 1},
		{"xdslens_xds_client_authority_server", dto.MetricType_GAUGE,
			map[string]string{"grpc_target": testTarget, "grpc_xds_authority": "#old", "grpc_xds_server": server}, 1},
		{"xdslens_xds_client_watcher_notifications_total", dto.MetricType_COUNTER,
			map[string]string{"grpc_target": testTarget, "grpc_xds_resource_type": "envoy.config.cluster.v3.Cluster", "kind": "resource"}, 1},
		{"xdslens_xds_client_streams_ended_total", dto.MetricType_COUNTER,
			map[string]string{"grpc_target": testTarget, "grpc_xds_server": server, "response_received": "false"}, 1},
	} {
		f := families[want.name]
		if f == nil {
			t.Errorf("%s: not served", want.name)
			continue
		}
		if f.GetType() != want.kind {
			t.Errorf("%s: type %v, want %v", want.name, f.GetType(), want.kind)
		}
		if v, ok := value(f, want.labels); !ok || v != want.value {
			t.Errorf("%s%v = %v (found %v), want %v; samples %v", want.name, want.labels, v, ok, want.value, f.GetMetric())
		}
	}
	if f := families["grpc_xds_client_resources"]; f != nil && f.GetHelp() != "Number of xDS resources." {
		t.Errorf("grpc_xds_client_resources help %q", f.GetHelp())
	}
	if families["target_info"] == nil {
		t.Error("no target_info series")
	}
}

// The Prometheus exporter keeps to its own registry.
func TestPrometheusPrivateRegistry(t *testing.T) {
	ctx := testContext(t)
	a, err := exporters.Prometheus()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown(ctx)
	b, err := exporters.Prometheus()
	if err != nil {
		t.Fatal(err) // a second one would fail on a shared registry
	}
	defer b.Shutdown(ctx)
	scenario(t, a)
	rec := httptest.NewRecorder()
	b.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if strings.Contains(rec.Body.String(), "grpc_xds_client") {
		t.Errorf("the second exporter serves the first one's metrics:\n%s", rec.Body.String())
	}
}

func TestServePrometheusErrors(t *testing.T) {
	ctx := testContext(t)
	if _, _, err := exporters.ServePrometheus(ctx, "127.0.0.1:0", nil); err == nil {
		t.Error("nil handler accepted")
	}
	if _, _, err := exporters.ServePrometheus(ctx, "256.0.0.1:0", http.NotFoundHandler()); err == nil {
		t.Error("bad address accepted")
	}
}

// otlpReceiver records the metric names of OTLP exports.
type otlpReceiver struct {
	colmetricpb.UnimplementedMetricsServiceServer
	mu    sync.Mutex
	names map[string]bool
	heads []string
}

func (r *otlpReceiver) record(req *colmetricpb.ExportMetricsServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.names == nil {
		r.names = map[string]bool{}
	}
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				r.names[m.GetName()] = true
			}
		}
	}
}

func (r *otlpReceiver) Export(ctx context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	r.record(req)
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

func (r *otlpReceiver) check(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, name := range a78Names {
		if !r.names[name] {
			t.Errorf("%s did not arrive; got %v", name, r.names)
		}
	}
}

func TestOTLPGRPC(t *testing.T) {
	ctx := testContext(t)
	recv := &otlpReceiver{}
	addr := xdstest.ServeGRPC(t, func(g *grpc.Server) { colmetricpb.RegisterMetricsServiceServer(g, recv) })

	for _, endpoint := range []string{addr, "http://" + addr} {
		t.Run(endpoint, func(t *testing.T) {
			recv.mu.Lock()
			recv.names = nil
			recv.mu.Unlock()
			var opts []exporters.Option
			if !strings.HasPrefix(endpoint, "http://") {
				opts = append(opts, exporters.WithInsecure())
			}
			p, err := exporters.OTLPGRPC(ctx, endpoint, opts...)
			if err != nil {
				t.Fatal(err)
			}
			scenario(t, p)
			// Shutdown flushes: the export happens before it returns.
			if err := p.Shutdown(ctx); err != nil {
				t.Fatalf("shutdown: %v", err)
			}
			recv.check(t)
		})
	}
}

func TestOTLPHTTP(t *testing.T) {
	ctx := testContext(t)
	recv := &otlpReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/metrics" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want a protobuf POST to /v1/metrics", http.StatusBadRequest)
			return
		}
		recv.mu.Lock()
		recv.heads = append(recv.heads, r.Header.Get("X-Token"))
		recv.mu.Unlock()
		body, err := io.ReadAll(r.Body)
		req := &colmetricpb.ExportMetricsServiceRequest{}
		if err == nil {
			err = proto.Unmarshal(body, req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		recv.record(req)
		out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	defer srv.Close()

	p, err := exporters.OTLPHTTP(ctx, strings.TrimPrefix(srv.URL, "http://"), exporters.WithInsecure(),
		exporters.WithHeaders(map[string]string{"X-Token": "secret"}))
	if err != nil {
		t.Fatal(err)
	}
	scenario(t, p)
	if err := p.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	recv.check(t)
	recv.mu.Lock()
	defer recv.mu.Unlock()
	if len(recv.heads) == 0 || recv.heads[0] != "secret" {
		t.Errorf("headers of the exports: %q, want X-Token: secret", recv.heads)
	}
}

func TestStdout(t *testing.T) {
	ctx := testContext(t)
	var buf bytes.Buffer
	p, err := exporters.Stdout(&buf)
	if err != nil {
		t.Fatal(err)
	}
	scenario(t, p)
	if err := p.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	var doc struct {
		ScopeMetrics []struct {
			Metrics []struct{ Name string }
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("stdout output is not one JSON document: %v\n%s", err, buf.String())
	}
	var names []string
	for _, sm := range doc.ScopeMetrics {
		for _, m := range sm.Metrics {
			names = append(names, m.Name)
		}
	}
	for _, name := range a78Names {
		if !slices.Contains(names, name) {
			t.Errorf("%s not written; got %v", name, names)
		}
	}
	if _, err := exporters.Stdout(nil); err == nil {
		t.Error("Stdout(nil) succeeded")
	}
}
