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
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
)

// otlpReceiver is an OTLP metrics receiver (the gRPC service, and the
// HTTP handler of POST /v1/metrics) that records what it is sent.
type otlpReceiver struct {
	colmetricpb.UnimplementedMetricsServiceServer

	mu sync.Mutex
	// metrics maps each service.name to the names of the metrics
	// exported under it.
	metrics map[string]map[string]bool
	// exports has, for each export received, the number of data points
	// of each metric.
	exports []map[string]int
	// fail is what the gRPC service answers exports with (nil: success).
	fail    error
	changed chan struct{}
}

func newOTLPReceiver() *otlpReceiver {
	return &otlpReceiver{metrics: map[string]map[string]bool{}, changed: make(chan struct{}, 1)}
}

// Export records an export over gRPC, and answers it with r.fail.
func (r *otlpReceiver) Export(_ context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	r.record(req)
	r.mu.Lock()
	defer r.mu.Unlock()
	return &colmetricpb.ExportMetricsServiceResponse{}, r.fail
}

// failWith has the gRPC service answer the exports from now on with err.
func (r *otlpReceiver) failWith(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = err
}

// received returns the exports received so far.
func (r *otlpReceiver) received() []map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.exports)
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
	points := map[string]int{}
	r.exports = append(r.exports, points)
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
				points[m.GetName()] += len(m.GetGauge().GetDataPoints()) + len(m.GetSum().GetDataPoints()) + len(m.GetHistogram().GetDataPoints())
			}
		}
	}
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// waitAny waits for one more export.
func (r *otlpReceiver) waitAny(t *testing.T) {
	t.Helper()
	select {
	case <-r.changed:
	case <-testContext(t).Done():
		t.Fatal("no export")
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

// startOTLPReceiver serves a new OTLP receiver over gRPC on loopback
// until the test ends, and returns it and its address.
func startOTLPReceiver(t *testing.T) (*otlpReceiver, string) {
	t.Helper()
	recv := newOTLPReceiver()
	return recv, xdstest.ServeGRPC(t, func(g *grpc.Server) { colmetricpb.RegisterMetricsServiceServer(g, recv) })
}

// TestOTLPEndpoint runs the demo with --otlp-endpoint and RPCs through
// xds:///demo against a real OTLP receiver on loopback, over gRPC and over
// HTTP: the clients' and the data plane's metrics arrive, under the
// service.name that --service-name gives (or "xdswatch").
func TestOTLPEndpoint(t *testing.T) {
	t.Parallel()
	recv, addr := startOTLPReceiver(t)
	web := httptest.NewServer(recv)
	defer web.Close()

	for _, tc := range []struct {
		endpoint, service string
		args              []string
	}{
		{"grpc://" + addr, defaultServiceName, nil},
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

// TestOTLPLastExport runs the demo with RPCs through xds:///demo and an
// OTLP interval longer than the test, so that the one export is the last
// one, at exit: it carries every instrument, the gauges of the cache, of
// the servers and of the circuit breakers included, which the end of the
// watches and channels would empty.
func TestOTLPLastExport(t *testing.T) {
	t.Parallel()
	recv, addr := startOTLPReceiver(t)
	p := startRun(t, "--output", "json", "--otlp-endpoint", "grpc://"+addr, "--otlp-interval", "1h",
		"--rpc-interval", "20ms", "xds:///demo")
	for {
		var e struct{ Event, Code string }
		if err := json.Unmarshal([]byte(p.line(t)), &e); err != nil {
			t.Fatal(err)
		}
		if e.Event == "rpc" && e.Code == "OK" {
			break
		}
	}
	p.interrupt(t)
	exports := recv.received()
	if len(exports) != 1 {
		t.Fatalf("%d exports, want the last one alone", len(exports))
	}
	for _, name := range []string{
		"grpc.xds_client.connected", "grpc.xds_client.resources", "xdslens.xds_client.authority_server",
		"xdslens.data_plane.in_flight", "xdslens.data_plane.max_requests",
		"grpc.xds_client.resource_updates_valid", "xdslens.data_plane.picks", "xdslens.data_plane.calls",
	} {
		if exports[0][name] == 0 {
			t.Errorf("the last export has no point of %s; it has %v", name, exports[0])
		}
	}
}

// TestOTLPErrorsLogged runs xdswatch, as a process of its own, pushing to
// a receiver that refuses every export, then accepts them: the first
// failure is logged through slog, in the format --log-format asks, while
// xdswatch runs, the failures that follow at debug level only, the
// recovery at info; nothing goes through Go's log package, whose lines
// would not be JSON.
func TestOTLPErrorsLogged(t *testing.T) {
	t.Parallel()
	recv, addr := startOTLPReceiver(t)
	recv.failWith(status.Error(codes.PermissionDenied, "not this tenant"))
	p := startProc(t, cleanEnv(), "--output", "json", "--log-format", "json", "--log-level", "info",
		"--otlp-endpoint", "grpc://"+addr, "--otlp-interval", "20ms", "lds:demo")
	type logLine struct{ Level, Msg, Err, To string }
	next := func() logLine {
		t.Helper()
		line := p.errLine(t)
		var l logLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("a line on standard error that is not slog's JSON: %q", line)
		}
		return l
	}
	if l := next(); l.Level != "WARN" || l.Msg != "metrics export failed; the next export tries again" ||
		!strings.Contains(l.Err, "not this tenant") || l.To != "OTLP gRPC to "+addr {
		t.Fatalf("first log line %+v, want the failed export", l)
	}
	// Three exports more fail, then they succeed.
	for len(recv.received()) < 4 {
		recv.waitAny(t)
	}
	recv.failWith(nil)
	if l := next(); l.Level != "INFO" || l.Msg != "metrics export works again" {
		t.Fatalf("log line %+v, want the recovery (and no more failures at info level)", l)
	}
	p.interrupt(t)
	for _, line := range drain(p.stderr.lines) {
		var l logLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Errorf("a line on standard error that is not slog's JSON: %q", line)
		}
	}
}
