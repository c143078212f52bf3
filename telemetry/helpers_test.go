package telemetry_test

import (
	"context"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/testing/metrictest"
	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
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

// The readers of metrics, shared with the other packages' tests.
var (
	collect    = metrictest.Collect
	find       = metrictest.Find
	labels     = metrictest.Labels
	lbl        = metrictest.Lbl
	series     = metrictest.Series
	waitSeries = metrictest.WaitSeries
	equal      = metrictest.Equal
	show       = metrictest.Show
)

func (f *fixture) series(name string) map[string]float64 {
	return series(collect(f.T, f.reader), name)
}

// waitSeries waits until the series of metric name equal want exactly.
func (f *fixture) waitSeries(name string, want map[string]float64) {
	f.T.Helper()
	waitSeries(f.T, f.Ctx, f.reader, name, want)
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

// cluster is a valid EDS cluster.
func cluster(name string) *clusterv3.Cluster { return controlplane.Cluster(name, name) }

func response(typeURL, version string, res ...proto.Message) *discoveryv3.DiscoveryResponse {
	return xdstest.Response(typeURL, version, res...)
}
