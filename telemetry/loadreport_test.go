package telemetry_test

import (
	"errors"
	"testing"
	"time"

	"github.com/xdslens/xdslens/internal/lrsserver"
	"github.com/xdslens/xdslens/internal/xdstest"
	"github.com/xdslens/xdslens/telemetry"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/lrs"
)

// The lrs_ instruments count the LRS streams and what the reports sent
// carried, exactly.
func TestLoadReportMetrics(t *testing.T) {
	ctx := xdstest.Context(t)
	svc := lrsserver.NewService(lrsserver.Config{Interval: 20 * time.Millisecond, SendAll: true})
	srv, err := lrsserver.Listen(ctx, "127.0.0.1:0", svc)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
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
	ended := lbl(telemetry.KeyTarget, testTarget, telemetry.KeyServer, srv.Addr(), telemetry.KeyResponseReceived, "true")
	waitSeries(t, ctx, reader, telemetry.MetricLRSStreamsEnded, map[string]float64{ended: 1})
	if err := svc.Wait(ctx, func() bool { return svc.Open() == 0 }); err != nil {
		t.Fatal(err)
	}
}
