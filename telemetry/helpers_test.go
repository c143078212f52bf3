package telemetry_test

import (
	"context"
	"fmt"
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
	"github.com/xdslens/xdslens/internal/testmain"
	"github.com/xdslens/xdslens/internal/xdstest"
	"github.com/xdslens/xdslens/telemetry"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// TestMain runs the parallel tests, which wait on loopback servers, timers
// and Prometheus rather than on the CPU, several at once, and checks that
// no goroutine outlives them.
func TestMain(m *testing.M) {
	xdstest.SetParallel(8)
	goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit))
}

const (
	testTarget = "test-target"
	testNodeID = "test-node"
)

var (
	cdsURL  = xdsresource.ClusterType.TypeURL()
	edsURL  = xdsresource.EndpointsType.TypeURL()
	cdsName = "envoy.config.cluster.v3.Cluster"
	edsName = "envoy.config.endpoint.v3.ClusterLoadAssignment"
)

// bootstrapFor returns a bootstrap with one insecure server at addr.
func bootstrapFor(addr string) xdstest.Bootstrap {
	return xdstest.Bootstrap{Servers: []string{addr}, Node: `{"id": "` + testNodeID + `"}`}
}

// clientOptions are the options every test client gets: those of
// xdstest.ClientOptions, the target of these tests, and resource timers
// that do not fire unless a test shortens them.
func clientOptions(extra ...xdsclient.Option) []xdsclient.Option {
	return xdstest.ClientOptions(append([]xdsclient.Option{
		xdsclient.WithTarget(testTarget),
		xdsclient.WithResourceTimeout(time.Hour),
	}, extra...)...)
}

// notifyHooks wakes xdstest.Until on every event. Added after the
// telemetry hooks, it runs after them for each event, so a condition
// evaluated on wake-up sees what the telemetry hooks recorded.
func notifyHooks() *xdsclient.Hooks {
	return &xdsclient.Hooks{
		ConnectivityChanged:    func(xdsclient.ConnectivityInfo) { xdstest.Notify() },
		ConnectedChanged:       func(xdsclient.ConnectedInfo) { xdstest.Notify() },
		StreamStarted:          func(xdsclient.StreamInfo) { xdstest.Notify() },
		StreamEnded:            func(xdsclient.StreamEndInfo) { xdstest.Notify() },
		ServerFailure:          func(xdsclient.ServerFailureInfo) { xdstest.Notify() },
		RequestSent:            func(xdsclient.RequestInfo) { xdstest.Notify() },
		ResponseReceived:       func(xdsclient.ResponseInfo) { xdstest.Notify() },
		CacheStateChanged:      func(xdsclient.CacheStateInfo) { xdstest.Notify() },
		WatcherNotified:        func(xdsclient.NotificationInfo) { xdstest.Notify() },
		AuthorityServerChanged: func(xdsclient.AuthorityServerInfo) { xdstest.Notify() },
		ResourceTimerStarted:   func(xdsclient.ResourceTimerInfo) { xdstest.Notify() },
		ResourceTimerStopped:   func(xdsclient.ResourceTimerInfo) { xdstest.Notify() },
	}
}

// fixture is a client on a scripted ADS server, observed by telemetry
// through a ManualReader.
type fixture struct {
	xdstest.Script
	c      *xdsclient.Client
	reader *sdkmetric.ManualReader
	m      *telemetry.Metrics

	mu     sync.Mutex
	starts map[string]int // timer starts by resource name
}

func newFixture(t *testing.T, features []string, opts ...xdsclient.Option) *fixture {
	t.Helper()
	srv := xdstest.NewADSServer(t)
	b := bootstrapFor(srv.Addr())
	b.Features = features
	return newFixtureOn(t, srv, b, opts...)
}

func newFixtureOn(t *testing.T, srv *xdstest.ADSServer, b xdstest.Bootstrap, opts ...xdsclient.Option) *fixture {
	t.Helper()
	f := &fixture{Script: xdstest.Script{T: t, Ctx: xdstest.Context(t), Srv: srv}, starts: map[string]int{}}
	c := xdstest.NewClient(t, b.Parse(t), clientOptions(opts...)...)
	f.c = c
	f.reader, f.m = newMetrics(t, c)
	t.Cleanup(c.AddHooks(notifyHooks()))
	t.Cleanup(c.AddHooks(&xdsclient.Hooks{ResourceTimerStarted: func(i xdsclient.ResourceTimerInfo) {
		f.mu.Lock()
		f.starts[i.Name]++
		f.mu.Unlock()
		xdstest.Notify()
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
func newMetrics(t testing.TB, src xdsclient.Source) (*sdkmetric.ManualReader, *telemetry.Metrics) {
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

// watch watches cds name and returns the cancel func; it is also called
// when the test ends.
func (f *fixture) watch(name string) func() {
	cancel := f.c.Watch(xdsresource.ClusterType, name, xdsclient.WatcherFuncs{})
	f.T.Cleanup(cancel)
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
	return series(collect(f.T, f.reader), name)
}

// waitSeries waits until the series of metric name equal want exactly.
func (f *fixture) waitSeries(name string, want map[string]float64) {
	f.T.Helper()
	waitSeries(f.T, f.Ctx, f.reader, name, want)
}

func waitSeries(t testing.TB, ctx context.Context, r *sdkmetric.ManualReader, name string, want map[string]float64) {
	t.Helper()
	var got map[string]float64
	ok := xdstest.Until(ctx, func() bool {
		got = series(collect(t, r), name)
		return equal(got, want)
	})
	if !ok {
		t.Fatalf("%s:\n got  %s\n want %s", name, show(got), show(want))
	}
}

// waitPoint waits until one series of metric name has value want.
func (f *fixture) waitPoint(name, labels string, want float64) {
	f.T.Helper()
	var got map[string]float64
	ok := xdstest.Until(f.Ctx, func() bool {
		got = f.series(name)
		v, ok := got[labels]
		return ok && v == want
	})
	if !ok {
		f.T.Fatalf("%s{%s}: want %v; series are %s", name, labels, want, show(got))
	}
}

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

func response(typeURL, version string, res ...proto.Message) *discoveryv3.DiscoveryResponse {
	return xdstest.Response(typeURL, version, res...)
}
