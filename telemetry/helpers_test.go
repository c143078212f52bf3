package telemetry_test

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/controlplane"
	"github.com/xdslens/xdslens/internal/xdstest"
	"github.com/xdslens/xdslens/telemetry"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	testTarget = "test-target"
	testNodeID = "test-node"
	// testTimeout bounds every wait.
	testTimeout = 10 * time.Second
)

var (
	cdsURL  = xdsresource.ClusterType.TypeURL()
	edsURL  = xdsresource.EndpointsType.TypeURL()
	cdsName = "envoy.config.cluster.v3.Cluster"
	edsName = "envoy.config.endpoint.v3.ClusterLoadAssignment"
)

// bootstrapJSON returns a bootstrap with one insecure server and extra
// top-level fields.
func bootstrapJSON(addr string, features []string, extra string) string {
	fs := ""
	if len(features) > 0 {
		fs = `, "server_features": ["` + strings.Join(features, `", "`) + `"]`
	}
	return fmt.Sprintf(`{
		"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}]%s}],
		"node": {"id": %q}%s
	}`, addr, fs, testNodeID, extra)
}

func parseBootstrap(t testing.TB, js string) *bootstrap.Config {
	t.Helper()
	cfg, err := bootstrap.Parse([]byte(js))
	if err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	return cfg
}

// clientOptions are the options every test client gets: a short backoff
// and A88 data error handling whatever the environment says.
func clientOptions(extra ...xdsclient.Option) []xdsclient.Option {
	return append([]xdsclient.Option{
		xdsclient.WithTarget(testTarget),
		xdsclient.WithBackoff(func(int) time.Duration { return 10 * time.Millisecond }),
		xdsclient.WithLegacyDataErrorHandling(false),
		xdsclient.WithResourceTimeout(time.Hour),
		xdsclient.WithLogger(slog.New(slog.DiscardHandler)),
	}, extra...)
}

// notifyHooks wakes waitUntil on every event. Added after the telemetry
// hooks, it runs after them for each event, so a condition evaluated on
// wake-up sees what the telemetry hooks recorded.
func notifyHooks() *xdsclient.Hooks {
	return &xdsclient.Hooks{
		ConnectivityChanged:    func(xdsclient.ConnectivityInfo) { events.notify() },
		ConnectedChanged:       func(xdsclient.ConnectedInfo) { events.notify() },
		StreamStarted:          func(xdsclient.StreamInfo) { events.notify() },
		StreamEnded:            func(xdsclient.StreamEndInfo) { events.notify() },
		ServerFailure:          func(xdsclient.ServerFailureInfo) { events.notify() },
		RequestSent:            func(xdsclient.RequestInfo) { events.notify() },
		ResponseReceived:       func(xdsclient.ResponseInfo) { events.notify() },
		CacheStateChanged:      func(xdsclient.CacheStateInfo) { events.notify() },
		WatcherNotified:        func(xdsclient.NotificationInfo) { events.notify() },
		AuthorityServerChanged: func(xdsclient.AuthorityServerInfo) { events.notify() },
		ResourceTimerStarted:   func(xdsclient.ResourceTimerInfo) { events.notify() },
		ResourceTimerStopped:   func(xdsclient.ResourceTimerInfo) { events.notify() },
	}
}

// fixture is a client on a scripted ADS server, observed by telemetry
// through a ManualReader.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	srv    *xdstest.ADSServer
	c      *xdsclient.Client
	reader *sdkmetric.ManualReader
	m      *telemetry.Metrics

	mu     sync.Mutex
	starts map[string]int // timer starts by resource name
}

func newFixture(t *testing.T, features []string, opts ...xdsclient.Option) *fixture {
	t.Helper()
	srv := xdstest.NewADSServer(t)
	return newFixtureOn(t, srv, bootstrapJSON(srv.Addr(), features, ""), opts...)
}

func newFixtureOn(t *testing.T, srv *xdstest.ADSServer, js string, opts ...xdsclient.Option) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: testContext(t), srv: srv, starts: map[string]int{}}
	c, err := xdsclient.New(parseBootstrap(t, js), clientOptions(opts...)...)
	if err != nil {
		t.Fatalf("xdsclient.New: %v", err)
	}
	t.Cleanup(c.Close)
	f.c = c
	f.reader, f.m = newMetrics(t, c)
	t.Cleanup(c.AddHooks(notifyHooks()))
	t.Cleanup(c.AddHooks(&xdsclient.Hooks{ResourceTimerStarted: func(i xdsclient.ResourceTimerInfo) {
		f.mu.Lock()
		f.starts[i.Name]++
		f.mu.Unlock()
		events.notify()
	}}))
	return f
}

// timerStarts returns how many times the timer of name has started.
func (f *fixture) timerStarts(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.starts[name]
}

// newMetrics observes src with a fresh ManualReader.
func newMetrics[S telemetry.Source](t testing.TB, src S) (*sdkmetric.ManualReader, *telemetry.Metrics) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	m, err := telemetry.New(src, telemetry.WithMeterProvider(mp))
	if err != nil {
		t.Fatalf("telemetry.New: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return reader, m
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// stream waits for the client's next ADS stream.
func (f *fixture) stream() *xdstest.Stream {
	f.t.Helper()
	st, err := f.srv.NextStream(f.ctx)
	if err != nil {
		f.t.Fatalf("waiting for an ADS stream: %v", err)
	}
	return st
}

// recv waits for the next request of typeURL on st.
func (f *fixture) recv(st *xdstest.Stream, typeURL string) *discoveryv3.DiscoveryRequest {
	f.t.Helper()
	req, err := st.RecvType(f.ctx, typeURL)
	if err != nil {
		f.t.Fatalf("waiting for a %s request: %v", typeURL, err)
	}
	return req
}

func (f *fixture) send(st *xdstest.Stream, resp *discoveryv3.DiscoveryResponse) {
	f.t.Helper()
	if err := st.Send(resp); err != nil {
		f.t.Fatalf("send: %v", err)
	}
}

// watch watches cds name and returns the cancel func; it is also called
// when the test ends.
func (f *fixture) watch(name string) func() {
	cancel := f.c.Watch(xdsresource.ClusterType, name, xdsclient.WatcherFuncs{})
	f.t.Cleanup(cancel)
	return cancel
}

// collect reads every metric now.
func collect(t testing.TB, r *sdkmetric.ManualReader) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("collect: %v", err)
	}
	return rm
}

// find returns the metric called name, and whether it was there.
func find(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// labels renders an attribute set as "k=v,k=v" in key order.
func labels(s attribute.Set) string {
	return s.Encoded(attribute.DefaultEncoder())
}

// lbl builds the same rendering from key, value pairs.
func lbl(kv ...string) string {
	var kvs []attribute.KeyValue
	for i := 0; i+1 < len(kv); i += 2 {
		kvs = append(kvs, attribute.String(kv[i], kv[i+1]))
	}
	return labels(attribute.NewSet(kvs...))
}

// series returns the points of a metric by label set: the value of a gauge
// or sum, the count of a histogram. A missing metric has no series.
func series(rm metricdata.ResourceMetrics, name string) map[string]float64 {
	out := map[string]float64{}
	m, ok := find(rm, name)
	if !ok {
		return out
	}
	switch d := m.Data.(type) {
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			out[labels(p.Attributes)] = float64(p.Value)
		}
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			out[labels(p.Attributes)] = float64(p.Value)
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			out[labels(p.Attributes)] = float64(p.Count)
		}
	}
	return out
}

func (f *fixture) series(name string) map[string]float64 {
	return series(collect(f.t, f.reader), name)
}

// waitSeries waits until the series of metric name equal want exactly.
func (f *fixture) waitSeries(name string, want map[string]float64) {
	f.t.Helper()
	waitSeries(f.t, f.ctx, f.reader, name, want)
}

func waitSeries(t testing.TB, ctx context.Context, r *sdkmetric.ManualReader, name string, want map[string]float64) {
	t.Helper()
	var got map[string]float64
	ok := waitUntil(ctx, func() bool {
		got = series(collect(t, r), name)
		return equal(got, want)
	})
	if !ok {
		t.Fatalf("%s:\n got  %s\n want %s", name, show(got), show(want))
	}
}

// waitPoint waits until one series of metric name has value want.
func (f *fixture) waitPoint(name, labels string, want float64) {
	f.t.Helper()
	var got map[string]float64
	ok := waitUntil(f.ctx, func() bool {
		got = f.series(name)
		v, ok := got[labels]
		return ok && v == want
	})
	if !ok {
		f.t.Fatalf("%s{%s}: want %v; series are %s", name, labels, want, show(got))
	}
}

// waitUntil evaluates cond now and after every hook event until it holds
// or ctx ends.
func waitUntil(ctx context.Context, cond func() bool) bool {
	for {
		woken := events.wait()
		if cond() {
			return true
		}
		select {
		case <-woken:
		case <-ctx.Done():
			return false
		}
	}
}

// broadcast wakes every goroutine waiting on it. A waiter takes the channel
// from wait before it checks its condition, so a change made after the
// check always closes that channel.
type broadcast struct {
	mu sync.Mutex
	ch chan struct{}
}

func (b *broadcast) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

func (b *broadcast) notify() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
}

// events is notified by notifyHooks on every client event.
var events broadcast

func equal(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func show(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("{")
	for i, k := range keys {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %v", k, m[k])
	}
	b.WriteString("}")
	return b.String()
}

// cluster is a valid EDS cluster.
func cluster(name string) *clusterv3.Cluster { return controlplane.Cluster(name, name) }

// invalidCluster is a Cluster that gRPC rejects (STATIC is not supported).
func invalidCluster(name string) *clusterv3.Cluster {
	return &clusterv3.Cluster{Name: name, ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}}
}

func response(typeURL, version string, res ...proto.Message) *discoveryv3.DiscoveryResponse {
	return xdstest.Response(typeURL, version, res...)
}

func errorResponse(typeURL, version string, errs ...*discoveryv3.ResourceError) *discoveryv3.DiscoveryResponse {
	r := xdstest.Response(typeURL, version)
	r.ResourceErrors = errs
	return r
}
