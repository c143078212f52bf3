package telemetry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/xdslens/xdslens/internal/lrsserver"
	"github.com/xdslens/xdslens/internal/xdstest"
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
