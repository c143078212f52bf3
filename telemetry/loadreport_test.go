package telemetry_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/lrsserver"
	"github.com/xdslens/xdslens/telemetry"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/lrs"
)

// The lrs_ instruments count the LRS streams and what the reports sent
// carried, exactly.
func TestLoadReportMetrics(t *testing.T) {
	lf := newLoadFixture(t, lrsserver.Config{Interval: 20 * time.Millisecond, SendAll: true})
	ctx, svc, srv, reader, load, release := lf.ctx, lf.svc, lf.srv, lf.reader, lf.load, lf.release
	loc := lrs.Locality{Zone: "z"}
	for range 3 {
		load.CallStarted(loc)
		load.CallFinished(loc, nil)
	}
	load.CallStarted(loc)
	load.CallFinished(loc, errors.New("x"))
	load.CallDropped("overload")
	load.CallDropped("")

	server := lbl(telemetry.KeyTarget, testTarget, telemetry.KeyServer, srv.Addr())
	kind := func(k string) string {
		return lbl(telemetry.KeyTarget, testTarget, telemetry.KeyServer, srv.Addr(), telemetry.KeyKind, k)
	}
	waitSeries(t, ctx, reader, telemetry.MetricLRSCalls, map[string]float64{
		kind(telemetry.CallsIssued): 4, kind(telemetry.CallsSucceeded): 3, kind(telemetry.CallsErrored): 1, kind(telemetry.CallsDropped): 2,
	})
	waitSeries(t, ctx, reader, telemetry.MetricLRSStreamsStarted, map[string]float64{server: 1})
	if n := series(collect(t, reader), telemetry.MetricLRSReports)[server]; n < 1 {
		t.Errorf("%s = %v, want at least 1", telemetry.MetricLRSReports, n)
	}

	release()
	ended := func(got string) string {
		return lbl(telemetry.KeyTarget, testTarget, telemetry.KeyServer, srv.Addr(), telemetry.KeyResponseReceived, got)
	}
	waitSeries(t, ctx, reader, telemetry.MetricLRSStreamsEnded, map[string]float64{ended("true"): 1, ended("false"): 0})
	waitSeries(t, ctx, reader, telemetry.MetricLRSStreamsStartFailed, map[string]float64{server: 0})
	if err := svc.Wait(ctx, func() bool { return svc.Open() == 0 }); err != nil {
		t.Fatal(err)
	}
}

// loadFixture is a client observed by telemetry that reports the load of
// cluster c1 to an LRS server on loopback.
type loadFixture struct {
	ctx     context.Context
	svc     *lrsserver.Service
	srv     *lrsserver.Server
	reader  *sdkmetric.ManualReader
	load    *lrs.ClusterLoad
	release func()
}

func newLoadFixture(t *testing.T, cfg lrsserver.Config) loadFixture {
	t.Helper()
	ctx := xdstest.Context(t)
	svc := lrsserver.NewService(cfg)
	srv, err := lrsserver.Listen(ctx, "127.0.0.1:0", svc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	c := xdstest.NewClient(t, bootstrapFor(srv.Addr()).Parse(t), clientOptions()...)
	reader, _ := newMetrics(t, c)
	t.Cleanup(c.AddHooks(&xdsclient.Hooks{
		LoadReportStreamStarted: func(xdsclient.LoadReportStreamInfo) { xdstest.Notify() },
		LoadReportStreamEnded:   func(xdsclient.LoadReportStreamEndInfo) { xdstest.Notify() },
		LoadReportSent:          func(xdsclient.LoadReportInfo) { xdstest.Notify() },
	}))
	load, release, err := c.ReportLoad(srv.Addr(), "c1", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return loadFixture{ctx, svc, srv, reader, load, release}
}

// lrs_stream_failures counts the LRS stream attempts that fail before a
// response, created or not, and not those that a release ends, even
// while a stream is being created.
func TestLoadReportFailuresCounted(t *testing.T) {
	t.Parallel()
	ctx := xdstest.Context(t)
	noLRS := xdstest.NewADSServer(t) // answers LRS with UNIMPLEMENTED
	paused := xdstest.NewADSServer(t)
	if err := paused.Pause(); err != nil { // streams wait while connecting
		t.Fatal(err)
	}
	c := xdstest.NewClient(t, xdstest.Bootstrap{Servers: []string{noLRS.Addr(), paused.Addr()}}.Parse(t), clientOptions()...)
	reader, _ := newMetrics(t, c)
	var mu sync.Mutex
	ends := map[string]int{}
	t.Cleanup(c.AddHooks(&xdsclient.Hooks{LoadReportStreamEnded: func(i xdsclient.LoadReportStreamEndInfo) {
		mu.Lock()
		ends[i.Server]++
		mu.Unlock()
		xdstest.Notify()
	}}))
	server := func(addr string) string { return lbl(telemetry.KeyTarget, testTarget, telemetry.KeyServer, addr) }

	_, release, err := c.ReportLoad(noLRS.Addr(), "c1", "")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]float64
	if !xdstest.Until(ctx, func() bool {
		got = series(collect(t, reader), telemetry.MetricLRSStreamFailures)
		return got[server(noLRS.Addr())] >= 3
	}) {
		t.Fatalf("%s: %s, want 3 or more failures of %s", telemetry.MetricLRSStreamFailures, show(got), noLRS.Addr())
	}
	release()

	// A stream still being created when the reporting is released ends,
	// and is no failure.
	_, release, err = c.ReportLoad(paused.Addr(), "c1", "")
	if err != nil {
		t.Fatal(err)
	}
	release() // the stream's creation waits on the paused server, or has not begun

	mu.Lock()
	n := ends[paused.Addr()]
	mu.Unlock()
	if n != 1 {
		t.Fatalf("%d stream ends for the released reporting, want 1", n)
	}
	if f := series(collect(t, reader), telemetry.MetricLRSStreamFailures)[server(paused.Addr())]; f != 0 {
		t.Errorf("a release while the stream was being created counts %v failures, want 0", f)
	}
	if f := series(collect(t, reader), telemetry.MetricLRSStreamsStartFailed)[server(paused.Addr())]; f != 1 {
		t.Errorf("%s = %v for the released attempt, want 1", telemetry.MetricLRSStreamsStartFailed, f)
	}
}
