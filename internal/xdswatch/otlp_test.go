package xdswatch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP metrics receiver (the gRPC service, and the
// HTTP handler of POST /v1/metrics) that records what it is sent.
type otlpReceiver struct {
	colmetricpb.UnimplementedMetricsServiceServer

	mu sync.Mutex
	// metrics maps each service.name to the names of the metrics
	// exported under it.
	metrics map[string]map[string]bool
	changed chan struct{}
}

func newOTLPReceiver() *otlpReceiver {
	return &otlpReceiver{metrics: map[string]map[string]bool{}, changed: make(chan struct{}, 1)}
}

// Export records an export over gRPC.
func (r *otlpReceiver) Export(_ context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	r.record(req)
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

// ServeHTTP records an export over HTTP.
func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/metrics" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want a protobuf POST to /v1/metrics", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(req.Body)
	export := &colmetricpb.ExportMetricsServiceRequest{}
	if err == nil {
		err = proto.Unmarshal(body, export)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.record(export)
	out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func (r *otlpReceiver) record(req *colmetricpb.ExportMetricsServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rm := range req.GetResourceMetrics() {
		service := ""
		for _, kv := range rm.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		if r.metrics[service] == nil {
			r.metrics[service] = map[string]bool{}
		}
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				r.metrics[service][m.GetName()] = true
			}
		}
	}
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// waitFor waits until metric has been exported under service.
func (r *otlpReceiver) waitFor(t *testing.T, service, metric string) {
	t.Helper()
	ctx := testContext(t)
	for {
		r.mu.Lock()
		ok := r.metrics[service][metric]
		var got []string
		for s, names := range r.metrics {
			got = append(got, fmt.Sprintf("%s: %d metrics", s, len(names)))
		}
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.changed:
		case <-ctx.Done():
			sort.Strings(got)
			t.Fatalf("no %s exported for service.name %q; got %q", metric, service, got)
		}
	}
}

// TestOTLPEndpoint runs the demo with --otlp-endpoint and RPCs through
// xds:///demo against a real OTLP receiver on loopback, over gRPC and over
// HTTP: the clients' and the data plane's metrics arrive, under the
// service.name that --service-name gives (or "xdswatch").
func TestOTLPEndpoint(t *testing.T) {
	t.Parallel()
	recv := newOTLPReceiver()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	colmetricpb.RegisterMetricsServiceServer(g, recv)
	served := make(chan struct{})
	go func() { defer close(served); g.Serve(lis) }()
	defer func() { g.Stop(); <-served }()
	web := httptest.NewServer(recv)
	defer web.Close()

	for _, tc := range []struct {
		endpoint, service string
		args              []string
	}{
		{"grpc://" + lis.Addr().String(), defaultServiceName, nil},
		{web.URL, "edge-proxy", []string{"--service-name", "edge-proxy"}},
	} {
		t.Run(strings.Split(tc.endpoint, ":")[0], func(t *testing.T) {
			args := append([]string{"--output", "json", "--otlp-endpoint", tc.endpoint, "--otlp-interval", "100ms", "--rpc-interval", "50ms"}, tc.args...)
			args = append(args, "xds:///demo")
			p := startRun(t, args...)
			var l listeningEvent
			if err := json.Unmarshal([]byte(p.line(t)), &l); err != nil || l.Event != eventListening {
				t.Fatalf("listening line: %+v, %v", l, err)
			}
			recv.waitFor(t, tc.service, "grpc.xds_client.connected")
			recv.waitFor(t, tc.service, "grpc.xds_client.resources")
			recv.waitFor(t, tc.service, "xdslens.data_plane.picks")
			recv.waitFor(t, tc.service, "xdslens.data_plane.calls")
			p.interrupt(t)
		})
	}
}

// TestOTLPEndpointParse checks the forms --otlp-endpoint takes.
func TestOTLPEndpointParse(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"grpc://127.0.0.1:4317":            "grpc://127.0.0.1:4317",
		"grpc://collector":                 "grpc://collector:4317",
		"grpcs://collector:443":            "grpcs://collector:443",
		"http://127.0.0.1:4318":            "http://127.0.0.1:4318/v1/metrics",
		"http://127.0.0.1:4318/":           "http://127.0.0.1:4318/v1/metrics",
		"http://[::1]":                     "http://[::1]:4318/v1/metrics",
		"https://otlp.example.com/otlp/v1": "https://otlp.example.com:4318/otlp/v1",
	} {
		e, err := parseOTLPEndpoint(in)
		if err != nil || e.String() != want {
			t.Errorf("parseOTLPEndpoint(%q) = %v, %v; want %s", in, e, err, want)
		}
	}
	for _, in := range []string{"127.0.0.1:4317", "tcp://x:1", "grpc://", "grpc://x:4317/path", "http://u@x:1", "http://x:1?q=1", "::"} {
		if _, err := parseOTLPEndpoint(in); err == nil || !strings.Contains(err.Error(), "--otlp-endpoint") {
			t.Errorf("parseOTLPEndpoint(%q): %v, want an error naming the flag", in, err)
		}
	}
}

// TestCollectorConfig checks the OpenTelemetry Collector configuration the
// documentation shows: its OTLP receivers listen where the
// --otlp-endpoint of its usage line points, on OTLP's ports, and its
// metrics pipeline goes from them to the prometheus exporter.
func TestCollectorConfig(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "xdswatch", "otel-collector.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	conf := string(b)
	for _, proto := range []string{"grpc", "http"} {
		m := regexp.MustCompile(`(?m)^      ` + proto + `:\n        endpoint: (\S+)$`).FindStringSubmatch(conf)
		if m == nil {
			t.Errorf("no %s receiver endpoint in\n%s", proto, conf)
			continue
		}
		flag := regexp.MustCompile(`\b` + proto + `://\S+`).FindString(conf)
		e, err := parseOTLPEndpoint(flag)
		if err != nil || e.hostPort != m[1] {
			t.Errorf("the usage line's %q goes to %v (%v); the receiver listens on %s", flag, e.hostPort, err, m[1])
		}
		if _, port, _ := net.SplitHostPort(m[1]); (proto == "grpc") != (port == otlpGRPCPort) {
			t.Errorf("%s receiver on port %s: want OTLP's", proto, port)
		}
	}
	for _, want := range []string{"receivers: [otlp]", "exporters: [prometheus]", "  prometheus:\n    endpoint: "} {
		if !strings.Contains(conf, want) {
			t.Errorf("the configuration has no %q", want)
		}
	}
}
