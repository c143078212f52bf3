package telemetry_test

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/telemetry"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

func (f *fixture) fetchLabels(outcome string) string {
	return lbl(telemetry.KeyTarget, testTarget, telemetry.KeyServer, f.Srv.Addr(),
		telemetry.KeyResourceType, cdsName, telemetry.KeyOutcome, outcome)
}

// fetchPoint returns the histogram point of one outcome.
func (f *fixture) fetchPoint(outcome string) (metricdata.HistogramDataPoint[float64], bool) {
	m, _ := find(collect(f.T, f.reader), telemetry.MetricResourceFetchDuration)
	h, _ := m.Data.(metricdata.Histogram[float64])
	for _, p := range h.DataPoints {
		if labels(p.Attributes) == f.fetchLabels(outcome) {
			return p, true
		}
	}
	return metricdata.HistogramDataPoint[float64]{}, false
}

// timerStarted waits until the entry's does-not-exist timer has started
// n times in all, the moment its fetch starts.
func (f *fixture) timerStarted(name string, n int) {
	f.T.Helper()
	if !xdstest.Until(f.Ctx, func() bool { return f.timerStarts(name) >= n }) {
		f.T.Fatalf("timer of %q started %d times, want %d", name, f.timerStarts(name), n)
	}
}

func TestFetchDurationOutcomes(t *testing.T) {
	transient := []string{bootstrap.FeatureResourceTimerIsTransientError}
	for _, tc := range []struct {
		outcome  string
		features []string
		timeout  time.Duration
		answer   func(f *fixture, st *xdstest.Stream)
		min, max time.Duration
	}{
		{telemetry.OutcomeACKed, nil, time.Hour, func(f *fixture, st *xdstest.Stream) {
			f.Send(st, response(cdsURL, "1", cluster("c1")))
		}, 0, 5 * time.Second},
		{telemetry.OutcomeNACKed, nil, time.Hour, func(f *fixture, st *xdstest.Stream) {
			f.Send(st, response(cdsURL, "1", xdstest.InvalidCluster("c1")))
		}, 0, 5 * time.Second},
		{telemetry.OutcomeReceivedError, nil, time.Hour, func(f *fixture, st *xdstest.Stream) {
			f.Send(st, xdstest.ErrorResponse(cdsURL, "1", xdstest.ResourceError("c1", codes.PermissionDenied, "scripted")))
		}, 0, 5 * time.Second},
		{telemetry.OutcomeDoesNotExist, nil, 30 * time.Millisecond, func(*fixture, *xdstest.Stream) {}, 30 * time.Millisecond, 5 * time.Second},
		{telemetry.OutcomeTimeout, transient, 30 * time.Millisecond, func(*fixture, *xdstest.Stream) {}, 60 * time.Millisecond, 5 * time.Second},
		{telemetry.OutcomeInterrupted, nil, time.Hour, func(f *fixture, st *xdstest.Stream) {
			st.End(status.Error(codes.Unavailable, "scripted stream failure"))
		}, 0, 5 * time.Second},
	} {
		t.Run(tc.outcome, func(t *testing.T) {
			f := newFixture(t, tc.features, xdsclient.WithResourceTimeout(tc.timeout))
			started := time.Now()
			f.watch("c1")
			st := f.NextStream()
			f.RecvType(st, cdsURL)
			if tc.timeout == time.Hour {
				f.timerStarted("c1", 1)
			}
			tc.answer(f, st)
			f.waitSeries(telemetry.MetricResourceFetchDuration, map[string]float64{f.fetchLabels(tc.outcome): 1})
			p, _ := f.fetchPoint(tc.outcome)
			sum := time.Duration(p.Sum * float64(time.Second))
			if sum < tc.min || sum > tc.max || sum > time.Since(started) {
				t.Errorf("fetch took %v, want within [%v, %v] and at most the test's %v", sum, tc.min, tc.max, time.Since(started))
			}
		})
	}
}

// A cancelled watch records no fetch; a fetch interrupted by a stream that
// ends is recorded, and the next stream's fetch is measured on its own.
func TestFetchDurationCancelAndRetry(t *testing.T) {
	f := newFixture(t, nil)
	cancel := f.watch("c0")
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	f.timerStarted("c0", 1)
	cancel()
	f.waitSeries(telemetry.MetricResources, map[string]float64{})
	<-st.Done() // the server's last watch is gone: its channel closes

	f.watch("c1")
	st = f.NextStream()
	f.RecvType(st, cdsURL)
	f.timerStarted("c1", 1)
	st.End(status.Error(codes.Unavailable, "scripted stream failure"))
	st = f.NextStream()
	f.RecvType(st, cdsURL)
	f.timerStarted("c1", 2)
	f.Send(st, response(cdsURL, "1", cluster("c1")))
	f.waitSeries(telemetry.MetricResourceFetchDuration, map[string]float64{
		f.fetchLabels(telemetry.OutcomeInterrupted): 1,
		f.fetchLabels(telemetry.OutcomeACKed):       1,
	})
}

func TestAuthorityServer(t *testing.T) {
	srv := xdstest.NewADSServer(t)
	other := xdstest.NewADSServer(t)
	b := bootstrapFor(srv.Addr())
	b.Authorities = `{"auth.example": {"xds_servers": ` + xdstest.ServersJSON(other.Addr()) + `}, "same.example": {}}`
	f := newFixtureOn(t, srv, b)
	f.watch("c1")
	f.watch("xdstp://auth.example/envoy.config.cluster.v3.Cluster/c2")
	f.watch("xdstp://same.example/envoy.config.cluster.v3.Cluster/c3")
	lab := func(auth, server string) string {
		return lbl(telemetry.KeyTarget, testTarget, telemetry.KeyAuthority, auth, telemetry.KeyServer, server, telemetry.KeyPriority, "0")
	}
	f.waitSeries(telemetry.MetricAuthorityServer, map[string]float64{
		lab("#old", srv.Addr()):           1,
		lab("auth.example", other.Addr()): 1,
		lab("same.example", srv.Addr()):   1,
	})
}

func TestWatcherNotifications(t *testing.T) {
	f := newFixture(t, nil)
	st := f.cached() // resource
	rec := make(chan xdsclient.NotificationKind, 10)
	defer f.c.Watch(xdsresource.ClusterType, "c1", xdsclient.WatcherFuncs{
		OnResourceChanged: func(_ *xdsclient.Resource, err error) {
			if err != nil {
				rec <- xdsclient.NotifyResourceError
			} else {
				rec <- xdsclient.NotifyResource
			}
		},
		OnAmbientError: func(error) { rec <- xdsclient.NotifyAmbientError },
	})() // a second watcher: resource
	f.Send(st, response(cdsURL, "2", xdstest.InvalidCluster("c1"))) // ambient_error ×2
	f.watch("c2")
	f.RecvType(st, cdsURL)
	// resource_error; c1 is in the full state again (the same invalid
	// bytes: no new callback), so it is not deleted.
	resp := xdstest.ErrorResponse(cdsURL, "3", xdstest.ResourceError("c2", codes.NotFound, "scripted"))
	resp.Resources = response(cdsURL, "3", xdstest.InvalidCluster("c1")).Resources
	f.Send(st, resp)
	lab := func(kind string) string {
		return lbl(telemetry.KeyTarget, testTarget, telemetry.KeyResourceType, cdsName, telemetry.KeyKind, kind)
	}
	f.waitSeries(telemetry.MetricWatcherNotifications, map[string]float64{
		lab("resource"):       2,
		lab("ambient_error"):  2,
		lab("resource_error"): 1,
	})
}

func TestStreams(t *testing.T) {
	f := newFixture(t, nil)
	st := f.cached()
	st.End(status.Error(codes.Unavailable, "scripted"))
	st = f.NextStream()
	f.RecvType(st, cdsURL)
	st.End(status.Error(codes.Unavailable, "scripted"))
	srv := lbl(telemetry.KeyTarget, testTarget, telemetry.KeyServer, f.Srv.Addr())
	end := func(got string) string {
		return lbl(telemetry.KeyTarget, testTarget, telemetry.KeyServer, f.Srv.Addr(), telemetry.KeyResponseReceived, got)
	}
	f.NextStream()
	f.waitSeries(telemetry.MetricStreamsStarted, map[string]float64{srv: 3})
	f.waitSeries(telemetry.MetricStreamsEnded, map[string]float64{end("true"): 1, end("false"): 1})
}

// Metrics attached to a running client start from its current state.
func TestLateAttach(t *testing.T) {
	srv := xdstest.NewADSServer(t)
	c, err := xdsclient.New(bootstrapFor(srv.Addr()).Parse(t), clientOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := make(chan struct{}, 1)
	defer c.Watch(xdsresource.ClusterType, "c1", xdsclient.WatcherFuncs{OnResourceChanged: func(*xdsclient.Resource, error) { got <- struct{}{} }})()
	defer c.Watch(xdsresource.ClusterType, "c2", xdsclient.WatcherFuncs{})()
	ctx := xdstest.Context(t)
	st, err := srv.NextStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecvType(ctx, cdsURL); err != nil {
		t.Fatal(err)
	}
	if err := st.Send(response(cdsURL, "1", cluster("c1"))); err != nil {
		t.Fatal(err)
	}
	<-got

	reader, _ := newMetrics(t, c)
	defer c.AddHooks(notifyHooks())()
	waitSeries(t, ctx, reader, telemetry.MetricResources, map[string]float64{
		resourcesLabels("acked"):     1,
		resourcesLabels("requested"): 1,
	})
	waitSeries(t, ctx, reader, telemetry.MetricConnected, map[string]float64{
		lbl(telemetry.KeyTarget, testTarget, telemetry.KeyServer, srv.Addr()): 1,
	})
	waitSeries(t, ctx, reader, telemetry.MetricAuthorityServer, map[string]float64{
		lbl(telemetry.KeyTarget, testTarget, telemetry.KeyAuthority, "#old", telemetry.KeyServer, srv.Addr(), telemetry.KeyPriority, "0"): 1,
	})
}

// With a pool, every client is observed, and a client's series go away
// when the pool closes it.
func TestPool(t *testing.T) {
	srv := xdstest.NewADSServer(t)
	pool := xdsclient.NewPool(bootstrapFor(srv.Addr()).Parse(t), clientOptions()...)
	ctx := xdstest.Context(t)

	// One client exists before the metrics, one is made after.
	a, releaseA, err := pool.Get("a")
	if err != nil {
		t.Fatal(err)
	}
	defer releaseA()
	defer a.AddHooks(notifyHooks())()
	defer a.Watch(xdsresource.ClusterType, "c1", xdsclient.WatcherFuncs{})()
	reader, m := newMetrics(t, pool)
	b, releaseB, err := pool.Get("b")
	if err != nil {
		t.Fatal(err)
	}
	defer releaseB()
	defer b.AddHooks(notifyHooks())()
	cancelB := b.Watch(xdsresource.ClusterType, "c1", xdsclient.WatcherFuncs{})
	defer cancelB()

	lab := func(target string) string {
		return lbl(telemetry.KeyTarget, target, telemetry.KeyAuthority, "#old",
			telemetry.KeyCacheState, "requested", telemetry.KeyResourceType, cdsName)
	}
	waitSeries(t, ctx, reader, telemetry.MetricResources, map[string]float64{lab("a"): 1, lab("b"): 1})
	for range 2 {
		st, err := srv.NextStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.RecvType(ctx, cdsURL); err != nil {
			t.Fatal(err)
		}
	}
	srvLab := func(target string) string {
		return lbl(telemetry.KeyTarget, target, telemetry.KeyServer, srv.Addr())
	}
	waitSeries(t, ctx, reader, telemetry.MetricConnected, map[string]float64{srvLab("a"): 1, srvLab("b"): 1})

	cancelB()
	releaseB()
	rm := collect(t, reader)
	for _, name := range []string{telemetry.MetricResources, telemetry.MetricConnected, telemetry.MetricAuthorityServer} {
		for k := range series(rm, name) {
			if k != lab("a") && k != srvLab("a") && k != lbl(telemetry.KeyTarget, "a", telemetry.KeyAuthority, "#old", telemetry.KeyServer, srv.Addr(), telemetry.KeyPriority, "0") {
				t.Errorf("%s{%s} still reported after the pool closed client b", name, k)
			}
		}
	}

	// After Close, nothing is reported and new clients are not observed.
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	c, releaseC, err := pool.Get("c")
	if err != nil {
		t.Fatal(err)
	}
	defer releaseC()
	defer c.Watch(xdsresource.ClusterType, "c1", xdsclient.WatcherFuncs{})()
	for _, name := range []string{telemetry.MetricResources, telemetry.MetricConnected, telemetry.MetricAuthorityServer} {
		if s := series(collect(t, reader), name); len(s) != 0 {
			t.Errorf("%s after Close: %s, want nothing", name, show(s))
		}
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := telemetry.New((*xdsclient.Client)(nil)); err == nil {
		t.Error("New(nil client) succeeded")
	}
	if _, err := telemetry.New((*xdsclient.Pool)(nil)); err == nil {
		t.Error("New(nil pool) succeeded")
	}
}

// A server the client has a channel to but never reached reads 0, not
// nothing (gRFC A78: 1 while there is a working stream, else 0).
func TestConnectedZeroForUnreachedServer(t *testing.T) {
	srv := xdstest.NewADSServer(t)
	srv.Stop()
	f := newFixtureOn(t, srv, bootstrapFor(srv.Addr()))
	f.watch("c1")
	f.waitSeries(telemetry.MetricConnected, map[string]float64{
		lbl(telemetry.KeyTarget, testTarget, telemetry.KeyServer, srv.Addr()): 0,
	})
}

// grpc.xds_client.connected reports the channels that exist: after the
// client switches back to the primary, the fallback server it closed has no
// series (it does not read 1 forever), nor does the primary once its last
// watch is cancelled; the authority_server series goes with the authority.
func TestConnectedDropsClosedChannels(t *testing.T) {
	t.Parallel()
	primary, fallback := xdstest.NewADSServer(t), xdstest.NewADSServer(t)
	b := xdstest.Bootstrap{Servers: []string{primary.Addr(), fallback.Addr()}, Node: `{"id": "` + testNodeID + `"}`}
	f := newFixtureOn(t, primary, b, xdsclient.WithFallback(true))
	server := func(addr string) string { return lbl(telemetry.KeyTarget, testTarget, telemetry.KeyServer, addr) }
	primary.Stop()
	cancel := f.watch("c1")
	fs := xdstest.Script{T: t, Ctx: f.Ctx, Srv: fallback}
	fst := fs.NextStream()
	fs.RecvType(fst, cdsURL)
	fs.Send(fst, response(cdsURL, "fb-1", cluster("c1")))
	f.waitSeries(telemetry.MetricConnected, map[string]float64{server(primary.Addr()): 0, server(fallback.Addr()): 1})

	if err := primary.Restart(); err != nil {
		t.Fatal(err)
	}
	pst := f.NextStream()
	f.RecvType(pst, cdsURL)
	f.Send(pst, response(cdsURL, "p-1", cluster("c1")))
	f.waitSeries(telemetry.MetricConnected, map[string]float64{server(primary.Addr()): 1})

	cancel()
	f.waitSeries(telemetry.MetricConnected, map[string]float64{})
	f.waitSeries(telemetry.MetricAuthorityServer, map[string]float64{})
}
