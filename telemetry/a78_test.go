package telemetry_test

// One test per gRFC A78 instrument, and one per value of the
// grpc.xds.cache_state label, each after a real scenario over loopback.

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

// resourcesLabels is the label set of the resources gauge for cds entries
// of old-style names.
func resourcesLabels(state string) string {
	return lbl(telemetry.KeyTarget, testTarget, telemetry.KeyAuthority, "#old",
		telemetry.KeyCacheState, state, telemetry.KeyResourceType, cdsName)
}

// cached has the server deliver a valid c1 and waits until it is ACKED.
func (f *fixture) cached() *xdstest.Stream {
	f.T.Helper()
	f.watch("c1")
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	// The fetch starts once the client has finished sending the
	// subscription; an answer applied before that is not measured.
	f.timerStarted("c1", 1)
	f.Send(st, response(cdsURL, "1", cluster("c1")))
	f.waitSeries(telemetry.MetricResources, map[string]float64{resourcesLabels("acked"): 1})
	f.RecvType(st, cdsURL) // ACK
	return st
}

// uncached watches c1 and waits for the subscription and its timer.
func (f *fixture) uncached() *xdstest.Stream {
	f.T.Helper()
	f.watch("c1")
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	return st
}

func TestResourcesCacheStates(t *testing.T) {
	failOnDataErrors := []string{bootstrap.FeatureFailOnDataErrors}
	transient := []string{bootstrap.FeatureResourceTimerIsTransientError}
	for _, tc := range []struct {
		state    string
		features []string
		timeout  time.Duration
		run      func(f *fixture)
	}{
		{"requested", nil, time.Hour, func(f *fixture) { f.uncached() }},
		{"does_not_exist", nil, 20 * time.Millisecond, func(f *fixture) { f.uncached() }},
		{"does_not_exist_but_cached", nil, time.Hour, func(f *fixture) {
			st := f.cached()
			f.Send(st, response(cdsURL, "2")) // full state without c1
		}},
		{"acked", nil, time.Hour, func(f *fixture) { f.cached() }},
		{"nacked", nil, time.Hour, func(f *fixture) {
			st := f.uncached()
			f.Send(st, response(cdsURL, "1", xdstest.InvalidCluster("c1")))
		}},
		{"nacked_but_cached", nil, time.Hour, func(f *fixture) {
			st := f.cached()
			f.Send(st, response(cdsURL, "2", xdstest.InvalidCluster("c1")))
		}},
		{"received_error", nil, time.Hour, func(f *fixture) {
			st := f.uncached()
			f.Send(st, xdstest.ErrorResponse(cdsURL, "1", xdstest.ResourceError("c1", codes.NotFound, "scripted")))
		}},
		{"received_error_but_cached", nil, time.Hour, func(f *fixture) {
			st := f.cached()
			f.Send(st, xdstest.ErrorResponse(cdsURL, "2", xdstest.ResourceError("c1", codes.Unavailable, "scripted")))
		}},
		{"timeout", transient, 20 * time.Millisecond, func(f *fixture) { f.uncached() }},
		// With fail_on_data_errors the held resource is dropped.
		{"does_not_exist", failOnDataErrors, time.Hour, func(f *fixture) {
			st := f.cached()
			f.Send(st, response(cdsURL, "2"))
		}},
		{"nacked", failOnDataErrors, time.Hour, func(f *fixture) {
			st := f.cached()
			f.Send(st, response(cdsURL, "2", xdstest.InvalidCluster("c1")))
		}},
		{"received_error", failOnDataErrors, time.Hour, func(f *fixture) {
			st := f.cached()
			f.Send(st, xdstest.ErrorResponse(cdsURL, "2", xdstest.ResourceError("c1", codes.PermissionDenied, "scripted")))
		}},
	} {
		name := tc.state
		if len(tc.features) > 0 {
			name += "/" + tc.features[0]
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, tc.features, xdsclient.WithResourceTimeout(tc.timeout))
			tc.run(f)
			f.waitSeries(telemetry.MetricResources, map[string]float64{resourcesLabels(tc.state): 1})
			// The gauge agrees with the cache.
			d := f.c.Dump()
			if len(d) != 1 || d[0].State.MetricLabel(d[0].Cached) != tc.state {
				t.Fatalf("cache holds %+v, want one entry in %s", d, tc.state)
			}
		})
	}
}

// Several entries, types and authorities: one series per label set, and
// series whose count drops to zero go away.
func TestResourcesLabelSets(t *testing.T) {
	srv := xdstest.NewADSServer(t)
	b := bootstrapFor(srv.Addr())
	b.Authorities = `{"auth.example": {}}`
	f := newFixtureOn(t, srv, b)
	xc2 := "xdstp://auth.example/envoy.config.cluster.v3.Cluster/c2"
	f.watch("c1")
	cancel2 := f.watch(xc2)
	cancel3 := f.c.Watch(xdsresource.EndpointsType, "e1", xdsclient.WatcherFuncs{})
	defer cancel3()
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	f.RecvType(st, edsURL)
	f.Send(st, response(cdsURL, "1", cluster("c1")))
	lab := func(auth, state, typ string) string {
		return lbl(telemetry.KeyTarget, testTarget, telemetry.KeyAuthority, auth,
			telemetry.KeyCacheState, state, telemetry.KeyResourceType, typ)
	}
	f.waitSeries(telemetry.MetricResources, map[string]float64{
		lab("#old", "acked", cdsName):             1,
		lab("auth.example", "requested", cdsName): 1,
		lab("#old", "requested", edsName):         1,
	})
	cancel2()
	cancel3()
	f.waitSeries(telemetry.MetricResources, map[string]float64{lab("#old", "acked", cdsName): 1})
}

func TestConnectedAndServerFailure(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	srvLabels := lbl(telemetry.KeyTarget, testTarget, telemetry.KeyServer, f.Srv.Addr())
	if s := f.series(telemetry.MetricConnected); len(s) != 0 {
		t.Fatalf("connected before any stream: %s, want no series", show(s))
	}
	st := f.cached()
	f.waitSeries(telemetry.MetricConnected, map[string]float64{srvLabels: 1})
	// The failure counter exists from the start, at 0, so that the
	// increase of the first failure shows.
	f.waitSeries(telemetry.MetricServerFailure, map[string]float64{srvLabels: 0})

	// The server goes away: the stream ends (after a response, so that is
	// no failure), reconnecting fails, the channel goes TRANSIENT_FAILURE.
	_ = st
	f.Srv.Stop()
	f.waitSeries(telemetry.MetricServerFailure, map[string]float64{srvLabels: 1})
	f.waitSeries(telemetry.MetricConnected, map[string]float64{srvLabels: 0})

	// Back: connected again only once a response arrives.
	if err := f.Srv.Restart(); err != nil {
		t.Fatal(err)
	}
	st = f.NextStream()
	f.RecvType(st, cdsURL)
	f.Send(st, response(cdsURL, "1", cluster("c1")))
	f.waitSeries(telemetry.MetricConnected, map[string]float64{srvLabels: 1})
	f.waitSeries(telemetry.MetricServerFailure, map[string]float64{srvLabels: 1})
}

// A stream that ends before any response is a server failure too.
func TestServerFailureStreamWithoutResponse(t *testing.T) {
	f := newFixture(t, nil)
	srvLabels := lbl(telemetry.KeyTarget, testTarget, telemetry.KeyServer, f.Srv.Addr())
	st := f.uncached()
	f.waitSeries(telemetry.MetricConnected, map[string]float64{srvLabels: 1})
	st.End(status.Error(codes.Unavailable, "scripted stream failure"))
	f.waitSeries(telemetry.MetricServerFailure, map[string]float64{srvLabels: 1})
	f.waitSeries(telemetry.MetricConnected, map[string]float64{srvLabels: 0})
	// Another stream ending without response is no new failure: the
	// server is still unhealthy.
	st = f.NextStream()
	f.RecvType(st, cdsURL)
	st.End(status.Error(codes.Unavailable, "scripted stream failure"))
	ended := lbl(telemetry.KeyTarget, testTarget, telemetry.KeyServer, f.Srv.Addr(), telemetry.KeyResponseReceived, "false")
	f.waitPoint(telemetry.MetricStreamsEnded, ended, 2)
	f.waitSeries(telemetry.MetricServerFailure, map[string]float64{srvLabels: 1})
}

func TestResourceUpdatesValidInvalid(t *testing.T) {
	f := newFixture(t, nil)
	for _, n := range []string{"c1", "c2", "c3", "c4"} {
		f.watch(n)
	}
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	typLabels := lbl(telemetry.KeyTarget, testTarget, telemetry.KeyServer, f.Srv.Addr(), telemetry.KeyResourceType, cdsName)

	// Two valid, one invalid, one TP3 error, and one resource nobody
	// subscribed to (not counted).
	resp := response(cdsURL, "1", cluster("c1"), cluster("c2"), xdstest.InvalidCluster("c3"), cluster("other"))
	resp.ResourceErrors = append(resp.ResourceErrors, xdstest.ResourceError("c4", codes.Unavailable, "scripted"))
	f.Send(st, resp)
	f.waitSeries(telemetry.MetricResourceUpdatesValid, map[string]float64{typLabels: 2})
	f.waitSeries(telemetry.MetricResourceUpdatesInvalid, map[string]float64{typLabels: 2})

	// The same resources again count again, unchanged ones included.
	f.Send(st, response(cdsURL, "2", cluster("c1"), cluster("c2")))
	f.waitSeries(telemetry.MetricResourceUpdatesValid, map[string]float64{typLabels: 4})
	f.waitSeries(telemetry.MetricResourceUpdatesInvalid, map[string]float64{typLabels: 2})
}

// The instruments have the kinds, units and descriptions of gRFC A78.
func TestInstrumentDefinitions(t *testing.T) {
	f := newFixture(t, nil)
	st := f.cached()
	st.End(status.Error(codes.Unavailable, "scripted"))
	st = f.NextStream()
	f.RecvType(st, cdsURL)
	f.Send(st, response(cdsURL, "2", xdstest.InvalidCluster("c1")))
	f.waitPoint(telemetry.MetricResources, resourcesLabels("nacked_but_cached"), 1)
	f.Srv.Stop()
	f.waitPoint(telemetry.MetricServerFailure, lbl(telemetry.KeyTarget, testTarget, telemetry.KeyServer, f.Srv.Addr()), 1)

	rm := collect(t, f.reader)
	if len(rm.ScopeMetrics) != 1 || rm.ScopeMetrics[0].Scope.Name != telemetry.ScopeName || rm.ScopeMetrics[0].Scope.Version != xdsclient.Version {
		t.Errorf("scopes %+v, want one: %s %s", rm.ScopeMetrics, telemetry.ScopeName, xdsclient.Version)
	}
	const (
		gauge        = "gauge"
		counter      = "counter"
		histogram    = "histogram"
		asyncCounter = "counter"
	)
	for _, want := range []struct {
		name, kind, unit, desc string
	}{
		{"grpc.xds_client.connected", gauge, "{bool}", "Whether or not the xDS client currently has a working ADS stream to the xDS server."},
		{"grpc.xds_client.server_failure", counter, "{failure}", "A counter of xDS servers going from healthy to unhealthy. A server goes unhealthy when we have a connectivity failure or when the ADS stream fails without seeing a response message, as per gRFC A57."},
		{"grpc.xds_client.resource_updates_valid", counter, "{resource}", "A counter of resources received that were considered valid. The counter will be incremented even for resources that have not changed."},
		{"grpc.xds_client.resource_updates_invalid", counter, "{resource}", "A counter of resources received that were considered invalid."},
		{"grpc.xds_client.resources", gauge, "{resource}", "Number of xDS resources."},
		{"xdslens.xds_client.resource_fetch_duration", histogram, "s", ""},
		{"xdslens.xds_client.authority_server", gauge, "{server}", ""},
		{"xdslens.xds_client.watcher_notifications", asyncCounter, "{notification}", ""},
		{"xdslens.xds_client.streams_started", counter, "{stream}", ""},
		{"xdslens.xds_client.streams_ended", counter, "{stream}", ""},
		{"xdslens.xds_client.streams_start_failed", counter, "{stream}", ""},
		{"xdslens.xds_client.resource_fetches", counter, "{fetch}", ""},
		{"xdslens.xds_client.lrs_streams_started", counter, "{stream}", ""},
		{"xdslens.xds_client.lrs_streams_start_failed", counter, "{stream}", ""},
		{"xdslens.xds_client.lrs_streams_ended", counter, "{stream}", ""},
		{"xdslens.xds_client.lrs_stream_failures", counter, "{failure}", ""},
		{"xdslens.xds_client.lrs_reports", counter, "{report}", ""},
		{"xdslens.xds_client.lrs_calls", counter, "{call}", ""},
	} {
		m, ok := find(rm, want.name)
		if !ok {
			t.Errorf("%s: not collected", want.name)
			continue
		}
		if m.Unit != want.unit || (want.desc != "" && m.Description != want.desc) || m.Description == "" {
			t.Errorf("%s: unit %q description %q, want %q %q", want.name, m.Unit, m.Description, want.unit, want.desc)
		}
		kind := ""
		switch d := m.Data.(type) {
		case metricdata.Gauge[int64]:
			kind = gauge
		case metricdata.Sum[int64]:
			if d.IsMonotonic && d.Temporality == metricdata.CumulativeTemporality {
				kind = counter
			}
		case metricdata.Histogram[float64]:
			kind = histogram
			for _, p := range d.DataPoints {
				if len(p.Bounds) == 0 || p.Bounds[0] != 0.001 || p.Bounds[len(p.Bounds)-1] != 60 {
					t.Errorf("%s: bounds %v, want 1ms to 60s", want.name, p.Bounds)
				}
			}
		}
		if kind != want.kind {
			t.Errorf("%s: data %T, want a %s", want.name, m.Data, want.kind)
		}
	}
}
