package telemetry_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/lrsserver"
	"github.com/xdslens/xdslens/telemetry"
)

// streamCounts are the stream counters of one server, summed over
// response_received.
type streamCounts struct {
	started, ended, startFailed float64
}

// open is the number of open streams the counters say there are.
func (c streamCounts) open() float64 { return c.started - c.ended }

// readStreams reads the stream counters of server: those of ADS, or with
// lrs those of LRS.
func readStreams(t testing.TB, r *sdkmetric.ManualReader, server string, lrs bool) streamCounts {
	t.Helper()
	names := [3]string{telemetry.MetricStreamsStarted, telemetry.MetricStreamsEnded, telemetry.MetricStreamsStartFailed}
	if lrs {
		names = [3]string{telemetry.MetricLRSStreamsStarted, telemetry.MetricLRSStreamsEnded, telemetry.MetricLRSStreamsStartFailed}
	}
	rm := collect(t, r)
	srv := lbl(telemetry.KeyTarget, testTarget, telemetry.KeyServer, server)
	ended := series(rm, names[1])
	return streamCounts{
		started:     series(rm, names[0])[srv],
		ended:       ended[lbl(telemetry.KeyTarget, testTarget, telemetry.KeyServer, server, telemetry.KeyResponseReceived, "true")] + ended[lbl(telemetry.KeyTarget, testTarget, telemetry.KeyServer, server, telemetry.KeyResponseReceived, "false")],
		startFailed: series(rm, names[2])[srv],
	}
}

// waitStreams waits until the stream counters of server satisfy ok.
func waitStreams(t *testing.T, ctx context.Context, r *sdkmetric.ManualReader, server string, lrs bool, what string, ok func(streamCounts) bool) streamCounts {
	t.Helper()
	var got streamCounts
	if !xdstest.Until(ctx, func() bool {
		got = readStreams(t, r, server, lrs)
		return ok(got)
	}) {
		t.Fatalf("%s: stream counters %+v", what, got)
	}
	return got
}

// Streams started minus streams ended is the number of open ADS streams,
// whatever ends them: a failure after a response, one before, the server
// going away (then streams cannot even be created: start failures, which
// are neither), and its return.
func TestStreamCountsMatchOpenStreams(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	addr := f.Srv.Addr()
	wait := func(what string, ok func(streamCounts) bool) streamCounts {
		t.Helper()
		return waitStreams(t, f.Ctx, f.reader, addr, false, what, ok)
	}
	st := f.cached()
	wait("first stream open", func(c streamCounts) bool { return c.started == 1 && c.open() == 1 })
	st.End(status.Error(codes.Unavailable, "scripted: after a response"))
	st = f.NextStream()
	f.RecvType(st, cdsURL)
	wait("second stream open", func(c streamCounts) bool { return c.started == 2 && c.open() == 1 })
	st.End(status.Error(codes.Unavailable, "scripted: before a response"))
	f.NextStream()
	wait("third stream open", func(c streamCounts) bool { return c.started == 3 && c.open() == 1 })

	f.Srv.Stop()
	down := wait("server down", func(c streamCounts) bool { return c.startFailed >= 2 && c.open() == 0 })
	if err := f.Srv.Restart(); err != nil {
		t.Fatal(err)
	}
	f.NextStream()
	c := wait("stream open again", func(c streamCounts) bool { return c.started == 4 && c.open() == 1 })
	if c.startFailed < down.startFailed {
		t.Errorf("start failures went from %v to %v", down.startFailed, c.startFailed)
	}
}

// The same holds for LRS streams: an attempt that cannot create a stream
// is a start failure, not an end.
func TestLoadReportStreamCountsMatchOpenStreams(t *testing.T) {
	t.Parallel()
	lf := newLoadFixture(t, lrsserver.Config{Interval: time.Hour})
	ctx, srv, reader, release := lf.ctx, lf.srv, lf.reader, lf.release
	wait := func(what string, ok func(streamCounts) bool) streamCounts {
		t.Helper()
		return waitStreams(t, ctx, reader, srv.Addr(), true, what, ok)
	}
	wait("stream open", func(c streamCounts) bool { return c.started == 1 && c.open() == 1 })

	srv.Stop()
	wait("server down", func(c streamCounts) bool { return c.startFailed >= 2 && c.ended == 1 && c.open() == 0 })
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	wait("stream open again", func(c streamCounts) bool { return c.started == 2 && c.open() == 1 })
	release()
	wait("released", func(c streamCounts) bool { return c.started == 2 && c.open() == 0 })
}

// A client whose server never accepts a connection exports every series
// of the server, those of streams included, at zero from its first
// channel, with the start failures counted; and every counter series of
// the watched type, at zero.
func TestSeriesOfUnreachedServer(t *testing.T) {
	srv := xdstest.NewADSServer(t)
	srv.Stop()
	f := newFixtureOn(t, srv, bootstrapFor(srv.Addr()))
	f.watch("c1")
	server := func(kv ...string) string {
		return lbl(append([]string{telemetry.KeyTarget, testTarget, telemetry.KeyServer, srv.Addr()}, kv...)...)
	}
	waitStreams(t, f.Ctx, f.reader, srv.Addr(), false, "start failures", func(c streamCounts) bool { return c.startFailed >= 1 })
	ended := map[string]float64{
		server(telemetry.KeyResponseReceived, "true"):  0,
		server(telemetry.KeyResponseReceived, "false"): 0,
	}
	for name, want := range map[string]map[string]float64{
		telemetry.MetricStreamsStarted:        {server(): 0},
		telemetry.MetricStreamsEnded:          ended,
		telemetry.MetricLRSStreamsStarted:     {server(): 0},
		telemetry.MetricLRSStreamsStartFailed: {server(): 0},
		telemetry.MetricLRSStreamsEnded:       ended,
		telemetry.MetricLRSStreamFailures:     {server(): 0},
		telemetry.MetricLRSReports:            {server(): 0},
		telemetry.MetricLRSCalls: {
			server(telemetry.KeyKind, telemetry.CallsIssued):    0,
			server(telemetry.KeyKind, telemetry.CallsSucceeded): 0,
			server(telemetry.KeyKind, telemetry.CallsErrored):   0,
			server(telemetry.KeyKind, telemetry.CallsDropped):   0,
		},
		telemetry.MetricResourceUpdatesValid:   {server(telemetry.KeyResourceType, cdsName): 0},
		telemetry.MetricResourceUpdatesInvalid: {server(telemetry.KeyResourceType, cdsName): 0},
		telemetry.MetricResourceFetches: {
			server(telemetry.KeyResourceType, cdsName, telemetry.KeyOutcome, telemetry.OutcomeACKed):         0,
			server(telemetry.KeyResourceType, cdsName, telemetry.KeyOutcome, telemetry.OutcomeNACKed):        0,
			server(telemetry.KeyResourceType, cdsName, telemetry.KeyOutcome, telemetry.OutcomeReceivedError): 0,
			server(telemetry.KeyResourceType, cdsName, telemetry.KeyOutcome, telemetry.OutcomeDoesNotExist):  0,
			server(telemetry.KeyResourceType, cdsName, telemetry.KeyOutcome, telemetry.OutcomeTimeout):       0,
			server(telemetry.KeyResourceType, cdsName, telemetry.KeyOutcome, telemetry.OutcomeInterrupted):   0,
		},
	} {
		f.waitSeries(name, want)
	}
	// Every kind of watcher callback has its series; the watcher has heard
	// only errors.
	kind := func(k string) string {
		return lbl(telemetry.KeyTarget, testTarget, telemetry.KeyResourceType, cdsName, telemetry.KeyKind, k)
	}
	f.waitPoint(telemetry.MetricWatcherNotifications, kind("resource"), 0)
	f.waitPoint(telemetry.MetricWatcherNotifications, kind("ambient_error"), 0)
	if _, ok := f.series(telemetry.MetricWatcherNotifications)[kind("resource_error")]; !ok {
		t.Errorf("no %s series of kind resource_error", telemetry.MetricWatcherNotifications)
	}
	if n := f.series(telemetry.MetricServerFailure)[server()]; n < 1 {
		t.Errorf("%s = %v, want at least 1", telemetry.MetricServerFailure, n)
	}
}
