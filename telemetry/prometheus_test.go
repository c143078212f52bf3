package telemetry_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/exporters"
	"github.com/xdslens/xdslens/internal/testing/promtest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/telemetry"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// scraped is one counter series as Prometheus names it, and the event
// that moves it once in the scenario of TestIncreaseShowsFirstEvent.
type scraped struct {
	event, selector string
}

// A real Prometheus scrapes a client through the OpenTelemetry Prometheus
// exporter. Every counter series that the scenario moves exists, at zero,
// in what Prometheus scraped before its first event, so that increase()
// shows that one event: fetches of each outcome (does_not_exist and
// timeout included), stream ends with and without a response, a stream
// start, valid and invalid updates, a resource callback.
func TestIncreaseShowsFirstEvent(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs Prometheus")
	}
	promBin := promtest.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Both servers are paused at first: the client has channels to them,
	// waiting for the servers' handshakes, and watches, so the series
	// exist, but no fetch can start. (A stopped server would have the
	// client back off, and come back to it seconds after the restart.)
	primary, silent := xdstest.NewADSServer(t), xdstest.NewADSServer(t)
	for _, s := range []*xdstest.ADSServer{primary, silent} {
		if err := s.Pause(); err != nil {
			t.Fatal(err)
		}
	}
	b := bootstrapFor(primary.Addr())
	b.Authorities = fmt.Sprintf(`{"timeout.example": {"xds_servers": [%s]}}`,
		xdstest.ServerJSON(silent.Addr(), bootstrap.FeatureResourceTimerIsTransientError))
	c := xdstest.NewClient(t, b.Parse(t), clientOptions(xdsclient.WithResourceTimeout(300*time.Millisecond))...)
	timers := make(chan string, 64)
	t.Cleanup(c.AddHooks(&xdsclient.Hooks{ResourceTimerStarted: func(i xdsclient.ResourceTimerInfo) {
		select {
		case timers <- i.Name:
		default:
		}
	}}))

	p, err := exporters.Prometheus()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(context.Background()) })
	m, err := telemetry.New(c, telemetry.WithMeterProvider(p))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	metrics, stop, err := exporters.ServePrometheus(ctx, "127.0.0.1:0", p.Handler)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(context.Background()) })

	const (
		cAcked, cNacked, cError, cMissing, cInterrupted = "c-acked", "c-nacked", "c-error", "c-missing", "c-interrupted"
	)
	cTimeout := "xdstp://timeout.example/envoy.config.cluster.v3.Cluster/c-timeout"
	for _, name := range []string{cAcked, cNacked, cError, cMissing, cTimeout} {
		t.Cleanup(c.Watch(xdsresource.ClusterType, name, xdsclient.WatcherFuncs{}))
	}

	prom := promtest.Run(t, promBin, t.TempDir(), func(string) string {
		return fmt.Sprintf(`global:
  scrape_interval: 250ms
  scrape_timeout: 250ms
scrape_configs:
  - job_name: client
    static_configs:
      - targets: [%q]
`, metrics)
	})

	fetches := func(server, outcome string) string {
		return fmt.Sprintf(`xdslens_xds_client_resource_fetches_total{grpc_xds_server=%q, outcome=%q}`, server, outcome)
	}
	ended := func(got string) string {
		return fmt.Sprintf(`xdslens_xds_client_streams_ended_total{grpc_xds_server=%q, response_received=%q}`, primary.Addr(), got)
	}
	onPrimary := fmt.Sprintf(`{grpc_xds_server=%q}`, primary.Addr())
	counters := []scraped{
		{"a resource ACKed", fetches(primary.Addr(), telemetry.OutcomeACKed)},
		{"a resource NACKed", fetches(primary.Addr(), telemetry.OutcomeNACKed)},
		{"an error from the server", fetches(primary.Addr(), telemetry.OutcomeReceivedError)},
		{"a resource that does not exist", fetches(primary.Addr(), telemetry.OutcomeDoesNotExist)},
		{"a fetch interrupted", fetches(primary.Addr(), telemetry.OutcomeInterrupted)},
		{"a resource timer fired", fetches(silent.Addr(), telemetry.OutcomeTimeout)},
		{"a stream ended after a response", ended("true")},
		{"a stream ended before a response", ended("false")},
		{"a stream to the silent server", fmt.Sprintf(`xdslens_xds_client_streams_started_total{grpc_xds_server=%q}`, silent.Addr())},
		{"valid resources", "grpc_xds_client_resource_updates_valid_total" + onPrimary},
		{"invalid resources", "grpc_xds_client_resource_updates_invalid_total" + onPrimary},
		{"a resource delivered", `xdslens_xds_client_watcher_notifications_total{kind="resource"}`},
	}
	// Prometheus has scraped the client twice: every series that exists
	// now is in the TSDB before the events.
	prom.WaitFor(t, "two scrapes", fmt.Sprintf(`count_over_time(grpc_xds_client_connected{grpc_xds_server=%q}[5m]) >= 2`, primary.Addr()))

	// The servers come up. The primary answers a valid, an invalid and
	// an erroneous resource and leaves one out; the silent server never
	// answers, and its timer fires.
	if err := primary.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := silent.Restart(); err != nil {
		t.Fatal(err)
	}
	ps := xdstest.Script{T: t, Ctx: ctx, Srv: primary}
	st := ps.NextStream()
	recvNames(t, ctx, st, cAcked, cNacked, cError, cMissing)
	resp := response(cdsURL, "1", cluster(cAcked), xdstest.InvalidCluster(cNacked))
	resp.ResourceErrors = []*discoveryv3.ResourceError{xdstest.ResourceError(cError, codes.PermissionDenied, "denied")}
	ps.Send(st, resp)
	// The client waits for the timer of the resource left out.
	prom.WaitFor(t, "the timer of "+cMissing, fetches(primary.Addr(), telemetry.OutcomeDoesNotExist)+" >= 1")
	// A subscription whose stream ends before an answer, after that
	// response; then a stream that ends before any response.
	t.Cleanup(c.Watch(xdsresource.ClusterType, cInterrupted, xdsclient.WatcherFuncs{}))
	recvNames(t, ctx, st, cInterrupted)
	waitTimer(t, ctx, timers, cInterrupted)
	st.End(status.Error(codes.Unavailable, "after a response"))
	st = ps.NextStream()
	ps.RecvType(st, cdsURL)
	primary.Stop()

	for _, s := range counters {
		prom.WaitUntil(t, s.event+" counted", s.selector, func(r []promtest.Sample) bool {
			return len(r) == 1 && r[0].Float() >= 1
		})
		increase := "increase(" + s.selector + "[5m])"
		prom.WaitUntil(t, s.event+" shows in increase()", increase, func(r []promtest.Sample) bool {
			return len(r) == 1 && r[0].Float() >= 0.9
		})
		// Because the series was scraped at zero first.
		prom.WaitFor(t, s.event+" was zero", "min_over_time("+s.selector+"[5m]) == 0")
	}
}

// recvNames reads CDS requests on st until one subscribes to every name.
func recvNames(t *testing.T, ctx context.Context, st *xdstest.Stream, names ...string) {
	t.Helper()
	for {
		req, err := st.RecvType(ctx, cdsURL)
		if err != nil {
			t.Fatalf("waiting for a CDS request naming %v: %v", names, err)
		}
		if !slices.ContainsFunc(names, func(n string) bool { return !slices.Contains(req.GetResourceNames(), n) }) {
			return
		}
	}
}

// waitTimer waits until the resource timer of name has started.
func waitTimer(t *testing.T, ctx context.Context, timers <-chan string, name string) {
	t.Helper()
	for {
		select {
		case n := <-timers:
			if n == name {
				return
			}
		case <-ctx.Done():
			t.Fatalf("the resource timer of %s did not start", name)
		}
	}
}
