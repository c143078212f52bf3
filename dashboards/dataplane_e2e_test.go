package dashboards_test

// The end-to-end test of the Data plane and Resilience rows and the
// data-plane alerts: xdswatch makes RPCs through one xds:/// channel per
// outcome, and through channels with outlier detection, retries and
// faults, against a go-control-plane management server and real gRPC
// backends on loopback,
// a real Prometheus scrapes it, and every data-plane panel query and alert
// expression is evaluated through Prometheus's HTTP API.

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	cswrrv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	wrrlocalityv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/dashboards"
	"github.com/xdslens/xdslens/internal/testing/promtest"
	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

// dataPlaneAlerts are the alerts on the RPCs of xdslens channels, which
// TestDataPlaneOnPrometheus checks.
var dataPlaneAlerts = []string{
	dashboards.AlertRPCsFailing, dashboards.AlertBackendErrors, dashboards.AlertRPCsDropped,
	dashboards.AlertCircuitBreaking, dashboards.AlertNearMaxRequests, dashboards.AlertEndpointsEjected,
}

// readsDataPlane reports whether a query reads the data-plane series
// (those of the RPCs, and the load-balancing metrics of the endpoint
// policies).
// readsServer reports whether a query reads the series of xDS-enabled
// servers.
func readsServer(expr string) bool {
	return strings.Contains(expr, "xdslens_xds_server_")
}

// readsDataPlane reports whether a query reads the data-plane series
// (the per-call ones included).
func readsDataPlane(expr string) bool {
	return strings.Contains(expr, "xdslens_data_plane_") || strings.Contains(expr, "grpc_lb_") || strings.Contains(expr, "grpc_client_")
}

// The listeners of the data-plane scenario, one xds:/// channel each, and
// what their RPCs become.
var dataPlaneListeners = []string{
	"ok",      // sent to cluster ok, answered OK
	"lrs",     // sent to cluster lrs, answered OK; its load goes to the control plane, which has no LRS
	"drop",    // dropped: cluster drop's endpoints drop 100 % as "throttle"
	"full",    // overloaded: cluster full has max_requests 0
	"busy",    // sent to cluster busy (max_requests 1), whose backend holds them: DEADLINE_EXCEEDED, one in flight
	"noroute", // no_route: the only route matches another method
	"clerr",   // cluster_error: the route's cluster does not exist
	"noep",    // no_endpoint: cluster noep has no endpoints
	"absent",  // config_error: the listener does not exist
	"wrr",     // sent to cluster wrr (weighted_round_robin): one backend reports its load, the other none, so it falls back to round robin
	"down",    // no_endpoint: cluster down's endpoint refuses connections
	"flaky",   // sent to cluster flaky until its backend stops: a disconnection
}

// dataPlaneResources returns the configuration of the scenario: a
// listener, route configuration, cluster and endpoints for each channel
// but absent, with okAddr, heldAddr, flakyAddr, plainAddr (which reports
// no load) and sickAddr (which fails every RPC) as backends and downAddr
// an address where nothing listens; the resilience channels' too
// (resilienceResources).
func dataPlaneResources(okAddr, heldAddr, flakyAddr, plainAddr, sickAddr, downAddr string) []proto.Message {
	res := resilienceResources(okAddr, plainAddr, sickAddr)
	routeTo := func(listener, cluster string) *routev3.RouteConfiguration {
		rc := controlplane.RouteConfig(listener+"-route", []string{"*"}, cluster)
		res = append(res, controlplane.Listener(listener, listener+"-route"), rc)
		return rc
	}
	maxRequests := func(c *clusterv3.Cluster, n uint32) *clusterv3.Cluster {
		c.CircuitBreakers = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{MaxRequests: wrapperspb.UInt32(n)}}}
		return c
	}
	routeTo("ok", "ok")
	routeTo("lrs", "lrs")
	routeTo("drop", "drop")
	routeTo("full", "full")
	routeTo("busy", "busy")
	routeTo("noroute", "spare").VirtualHosts[0].Routes[0].Match = &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: "/other.Service/Method"}}
	routeTo("clerr", "missing")
	routeTo("noep", "noep")
	routeTo("wrr", "wrr")
	routeTo("down", "down")
	routeTo("flaky", "flaky")
	wrr, _ := anypb.New(&cswrrv3.ClientSideWeightedRoundRobin{BlackoutPeriod: durationpb.New(0), WeightUpdatePeriod: durationpb.New(100 * time.Millisecond)})
	dropping := controlplane.Endpoints("drop", okAddr)
	dropping.Policy = &endpointv3.ClusterLoadAssignment_Policy{DropOverloads: []*endpointv3.ClusterLoadAssignment_Policy_DropOverload{{
		Category: "throttle", DropPercentage: &typev3.FractionalPercent{Numerator: 100},
	}}}
	return append(res,
		controlplane.Cluster("ok", ""), controlplane.Endpoints("ok", okAddr),
		controlplane.ClusterWithLoadReporting("lrs", ""), controlplane.Endpoints("lrs", okAddr),
		controlplane.Cluster("drop", ""), dropping,
		maxRequests(controlplane.Cluster("full", ""), 0), controlplane.Endpoints("full", okAddr),
		maxRequests(controlplane.Cluster("busy", ""), 1), controlplane.Endpoints("busy", heldAddr),
		controlplane.Cluster("spare", ""), controlplane.Endpoints("spare", okAddr),
		controlplane.Cluster("noep", ""), controlplane.Endpoints("noep"),
		rpctest.WithLBPolicy(controlplane.Cluster("wrr", ""), &wrrlocalityv3.WrrLocality{EndpointPickingPolicy: &clusterv3.LoadBalancingPolicy{
			Policies: []*clusterv3.LoadBalancingPolicy_Policy{{TypedExtensionConfig: &corev3.TypedExtensionConfig{Name: "wrr", TypedConfig: wrr}}},
		}}), controlplane.Endpoints("wrr", okAddr, plainAddr),
		controlplane.Cluster("down", ""), controlplane.Endpoints("down", downAddr),
		controlplane.Cluster("flaky", ""), controlplane.Endpoints("flaky", flakyAddr),
	)
}

func TestDataPlaneOnPrometheus(t *testing.T) {
	t.Parallel() // waits on Prometheus's scrapes and rule evaluations
	if testing.Short() {
		t.Skip("end-to-end test: builds xdswatch and runs Prometheus")
	}
	promBin := promtest.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()

	ok, err := backends.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ok.Stop)
	held, err := backends.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(held.Stop)
	t.Cleanup(held.Hold())
	ok.ReportLoad(0.5, 100) // for cluster wrr's weights
	flaky, err := backends.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(flaky.Stop)
	plain, err := backends.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plain.Stop)
	sick, err := backends.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sick.Stop)
	sick.Fail(backends.Failure{Every: 1})
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downAddr := down.Addr().String()
	down.Close() // nothing listens there: connections are refused
	cp, err := controlplane.Start(ctx, "127.0.0.1:0", controlplane.WithDefaultNode())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	if err := cp.SetResources(ctx, "", "1", dataPlaneResources(ok.Addr(), held.Addr(), flaky.Addr(), plain.Addr(), sick.Addr(), downAddr)...); err != nil {
		t.Fatal(err)
	}
	bootstrapFile := filepath.Join(dir, "bootstrap.json")
	bootstrap := fmt.Sprintf(`{"xds_servers": [%s], "node": {"id": "dashboards-data-plane"}}`, serverJSON(cp.Addr()))
	if err := os.WriteFile(bootstrapFile, []byte(bootstrap), 0o644); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	args := []string{"--bootstrap", bootstrapFile, "--target", "dp", "--metrics-addr", "127.0.0.1:0", "--output", "json",
		"--resource-timeout", "1s", "--rpc-interval", "100ms", "--rpc-timeout", "300ms",
		"--rpc-method", "/grpc.testing.TestService/EmptyCall"}
	for _, l := range append(slices.Clone(dataPlaneListeners), resilienceListeners...) {
		args = append(args, "xds:///"+l)
	}
	watch := startXdswatch(t, args...)
	prom := startPrometheus(t, promBin, dir, watch.metrics)

	// Every outcome but unsupported_action (no route here has such an
	// action) is scraped, and the RPCs the held backend never answers.
	prom.ExpectLabels(t, "pick outcomes", `sum by (outcome) (`+dashboards.MetricDataPlanePicks+`) > 0`, dashboards.LabelOutcome,
		"sent", "no_route", "cluster_error", "config_error", "no_endpoint", "dropped", "overloaded")
	prom.ExpectLabels(t, "call statuses", `sum by (grpc_status) (`+dashboards.MetricDataPlaneCalls+`) > 0`, dashboards.LabelStatus,
		"OK", "DEADLINE_EXCEEDED")
	// Once cluster flaky has served, its backend stops: its READY
	// connection is lost.
	if err := flaky.WaitCalls(ctx, 1); err != nil {
		t.Fatal(err)
	}
	flaky.Stop()
	prom.ExpectLabels(t, "disconnections", dashboards.MetricPickFirstDisconnections+` > 0`, dashboards.LabelBackendService, "flaky")

	// Every data-plane panel query returns series for the xdswatch
	// process, and nothing for a job that does not exist.
	fleet := fleetOf(watch)
	var n int
	for _, q := range allPanelQueries(t) {
		if !readsDataPlane(q.expr) {
			continue
		}
		n++
		expectPanelData(t, prom, q, substitute(q.expr, rateWindow, fleet))
		expectNoOtherJob(t, prom, q)
	}
	if n < 6 {
		t.Errorf("%d data-plane panel queries, want one per panel of the Data plane row at least", n)
	}
	// Selected panels show what the scenario did.
	prom.ExpectLabels(t, "RPCs failed by outcome", panelExpr(t, "Failed picks by outcome", fleet)+" > 0", dashboards.LabelOutcome,
		"no_route", "cluster_error", "config_error", "no_endpoint", "dropped", "overloaded")
	prom.ExpectLabels(t, "drops", panelExpr(t, "Drops by category", fleet)+" > 0", dashboards.LabelCategory, "throttle")
	prom.ExpectLabels(t, "busy cluster at max_requests", panelExpr(t, "In flight / max_requests", fleet)+" == 1",
		dashboards.LabelLeafCluster, "busy")
	prom.ExpectLabels(t, "configs", panelExpr(t, "Config updates vs errors", fleet)+" >= 0", dashboards.LabelChannelTarget, "xds:///ok")
	// A channel whose first config fails has its error series born at 1:
	// the panel's rate cannot show that first error, the counter has it.
	prom.ExpectLabels(t, "config errors", dashboards.MetricDataPlaneConfigs+`{result="error"} > 0`, dashboards.LabelChannelTarget, "xds:///absent")
	// Every data-plane series has the xDS client's target, as the client's
	// own series do: one target selects both.
	prom.WaitUntil(t, "one target", `count by (grpc_target) ({job="`+xdswatchJob+`", __name__=~"xdslens_data_plane_.*|grpc_lb_.*|grpc_xds_client_connected"})`,
		func(r []promtest.Sample) bool { return len(r) == 1 && r[0].Metric[dashboards.LabelTarget] == "dp" })
	// The RPCs to cluster busy all end DEADLINE_EXCEEDED.
	prom.ExpectLabels(t, "calls failing at backends", panelExpr(t, "Calls failing at backends by cluster", fleet)+" == 1",
		dashboards.LabelBackendService, "busy")

	expectResiliencePanels(t, prom, fleet)

	// Load reports of cluster lrs go to the control plane, which does not
	// serve LRS: its streams fail, and no report goes out.
	prom.ExpectLabels(t, "LRS stream failures", panelExpr(t, "LRS stream failures", fleet)+" > 0", dashboards.LabelServer, cp.Addr())

	// Every data-plane alert fires on what the scenario did.
	want := map[string]struct {
		label  string
		values []string
	}{
		dashboards.AlertRPCsFailing:     {dashboards.LabelOutcome, []string{"no_route", "cluster_error", "config_error", "no_endpoint"}},
		dashboards.AlertBackendErrors:   {dashboards.LabelBackendService, []string{"busy"}},
		dashboards.AlertRPCsDropped:     {dashboards.LabelCategory, []string{"throttle"}},
		dashboards.AlertCircuitBreaking: {dashboards.LabelBackendService, []string{"full"}},
		dashboards.AlertNearMaxRequests: {dashboards.LabelLeafCluster, []string{"busy"}},
		// A third of cluster outlier's endpoints ejected, over 30 %.
		dashboards.AlertEndpointsEjected: {dashboards.LabelBackendService, []string{"outlier"}},
		// The load reporting alert is the xDS client's, not the RPCs'.
		dashboards.AlertLoadReportingFailing: {dashboards.LabelServer, []string{cp.Addr()}},
	}
	for _, r := range e2eRules().Rules {
		if w, ok := want[r.Alert]; ok {
			expectAlert(t, prom, r, w.label, w.values...)
		}
	}
	prom.WaitForAlerts(t, append(slices.Clone(dataPlaneAlerts), dashboards.AlertLoadReportingFailing))

	// Cluster noep gets an endpoint: the RPCs of xds:///noep succeed, and
	// its XdsClientRPCsFailing resolves within the short window and an
	// evaluation of the last failure, by Prometheus's own clock.
	fixed := dataPlaneResources(ok.Addr(), held.Addr(), flaky.Addr(), plain.Addr(), sick.Addr(), downAddr)
	for i, r := range fixed {
		if e, isEDS := r.(*endpointv3.ClusterLoadAssignment); isEDS && e.GetClusterName() == "noep" {
			fixed[i] = controlplane.Endpoints("noep", ok.Addr())
		}
	}
	if err := cp.SetResources(ctx, "", "2", fixed...); err != nil {
		t.Fatal(err)
	}
	noep := `{xdslens_channel_target="xds:///noep"`
	failing := `ALERTS{alertname="` + dashboards.AlertRPCsFailing + `", alertstate="firing", ` + noep[1:] + "}"
	prom.WaitUntil(t, "XdsClientRPCsFailing of xds:///noep resolved", failing, func(r []promtest.Sample) bool { return len(r) == 0 })
	end := time.Now()
	failures := dashboards.MetricDataPlanePicks + noep + `, outcome="no_endpoint"}`
	final, err := prom.Query(failures)
	if err != nil || len(final) != 1 {
		t.Fatalf("%s: %v, %v", failures, final, err)
	}
	lastFailure := firstAt(t, prom, failures+" >= "+final[0].Value[1].(string), start, end)
	lastFiring := lastAt(t, prom, failing, start, end)
	gap, bound := lastFiring.Sub(lastFailure), e2eShortWindow+4*time.Second
	t.Logf("XdsClientRPCsFailing of xds:///noep fired until %v after the last failure", gap)
	if gap > bound {
		t.Errorf("XdsClientRPCsFailing of xds:///noep fired until %v after the last failure, want %v at most", gap, bound)
	}

	if dir := os.Getenv("XDSLENS_DASHBOARD_PICTURES"); dir != "" {
		drawDataPlanePictures(t, prom, dir, "e2e-", start, time.Now())
	}
	watch.Stop(t)
	prom.Stop(t)
}

// rangeTimes returns the times, every second from start to end, at which
// expr returns a series.
func rangeTimes(t *testing.T, prom *promtest.Server, expr string, start, end time.Time) []time.Time {
	t.Helper()
	r, err := prom.QueryRange(expr, start, end, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var out []time.Time
	for _, s := range r {
		for _, v := range s.Values {
			if ts, ok := v[0].(float64); ok {
				out = append(out, time.UnixMilli(int64(ts*1000)))
			}
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	if len(out) == 0 {
		t.Fatalf("%q returns nothing from %v to %v", expr, start, end)
	}
	return out
}

// lastAt returns the last time from start to end, every second, at which
// expr returns a series.
func lastAt(t *testing.T, prom *promtest.Server, expr string, start, end time.Time) time.Time {
	t.Helper()
	ts := rangeTimes(t, prom, expr, start, end)
	return ts[len(ts)-1]
}

// firstAt returns the first time from start to end, every second, at which
// expr returns a series.
func firstAt(t *testing.T, prom *promtest.Server, expr string, start, end time.Time) time.Time {
	t.Helper()
	return rangeTimes(t, prom, expr, start, end)[0]
}
