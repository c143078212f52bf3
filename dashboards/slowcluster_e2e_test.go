package dashboards_test

// Which cluster is slow: xdswatch sends RPCs through a listener whose
// route splits them between three clusters, one of which has a locality
// whose backend answers late, a real Prometheus scrapes it, and the
// Latency and errors by cluster row ranks that cluster, and that
// locality, first.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/dashboards"
	"github.com/xdslens/xdslens/internal/testing/promtest"
	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

// slowDelay is how long the slow backend takes to answer: above every
// latency the other backends have on loopback, and a bucket boundary of
// gRFC A66's (0.25 s), so that a quantile of its attempts is above it.
const slowDelay = 250 * time.Millisecond

// slowClusterResources returns listener shop's configuration: its route
// splits RPCs evenly between clusters a, b and slow; a and b have one
// locality (zone z1) with the backend fastAddr, slow has two, z1 with
// slowAddr and z2 with fastAddr.
func slowClusterResources(fastAddr, slowAddr string) []proto.Message {
	route := rpctest.RouteConfig("shop-route", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToWeighted(
		rpctest.WeightedCluster{Name: "a", Weight: 1}, rpctest.WeightedCluster{Name: "b", Weight: 1}, rpctest.WeightedCluster{Name: "slow", Weight: 1})))
	return []proto.Message{
		controlplane.Listener("shop", "shop-route"), route,
		controlplane.Cluster("a", ""), rpctest.LocalityEndpoints("a", rpctest.Locality{Zone: "z1", Weight: 1, Addrs: []string{fastAddr}}),
		controlplane.Cluster("b", ""), rpctest.LocalityEndpoints("b", rpctest.Locality{Zone: "z1", Weight: 1, Addrs: []string{fastAddr}}),
		controlplane.Cluster("slow", ""), rpctest.LocalityEndpoints("slow",
			rpctest.Locality{Zone: "z1", Weight: 1, Addrs: []string{slowAddr}},
			rpctest.Locality{Zone: "z2", Weight: 1, Addrs: []string{fastAddr}}),
	}
}

// readmeSlowestQuery is the query the README gives for "which cluster is
// slow" in Prometheus itself, without the dashboards' variables.
const readmeSlowestQuery = `sort_desc(histogram_quantile(0.99, sum by (le, grpc_lb_backend_service) (rate(grpc_client_attempt_duration_seconds_bucket{grpc_lb_locality!=""}[5m]))))`

// value returns the value of an instant query's sample.
func value(t *testing.T, s promtest.Sample) float64 {
	t.Helper()
	str, _ := s.Value[1].(string)
	v, err := strconv.ParseFloat(str, 64)
	if err != nil {
		t.Fatalf("sample %v: %v", s, err)
	}
	return v
}

// TestWhichClusterIsSlow answers "which cluster is slow" with the latency
// row over a real Prometheus: Slowest clusters ranks cluster slow first,
// with a p99 at or above the slow backend's delay and the others below
// it; the p99 by locality ranks slow's zone z1 first; and no attempt
// failed.
func TestWhichClusterIsSlow(t *testing.T) {
	t.Parallel() // waits on Prometheus's scrapes
	if testing.Short() {
		t.Skip("end-to-end test: runs xdswatch and Prometheus")
	}
	promBin := promtest.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	fast, err := backends.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fast.Stop)
	slow, err := backends.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(slow.Stop)
	slow.Fail(backends.Failure{Delay: slowDelay})
	cp, err := controlplane.Start(ctx, "127.0.0.1:0", controlplane.WithDefaultNode())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	if err := cp.SetResources(ctx, "", "1", slowClusterResources(fast.Addr(), slow.Addr())...); err != nil {
		t.Fatal(err)
	}
	bootstrapFile := filepath.Join(dir, "bootstrap.json")
	bootstrap := fmt.Sprintf(`{"xds_servers": [%s], "node": {"id": "dashboards-slow-cluster"}}`, serverJSON(cp.Addr()))
	if err := os.WriteFile(bootstrapFile, []byte(bootstrap), 0o644); err != nil {
		t.Fatal(err)
	}
	watch := startXdswatch(t, "--bootstrap", bootstrapFile, "--target", "shop", "--metrics-addr", "127.0.0.1:0", "--output", "json",
		"--rpc-interval", "20ms", "--rpc-concurrency", "2", "--rpc-timeout", "2s", "--rpc-method", "/grpc.testing.TestService/EmptyCall",
		"xds:///shop")
	prom := startPrometheus(t, promBin, dir, watch.metrics)
	fleet := fleetOf(watch)
	fleet["target"] = "shop"

	// Enough attempts sent to each locality of each cluster.
	const enough = 10
	perLocality := fmt.Sprintf(`sum by (%s, %s) (%s_count{job=%q, %s!=""}) >= %d`,
		dashboards.LabelBackendService, dashboards.LabelLocality, dashboards.MetricAttemptDuration, xdswatchJob, dashboards.LabelLocality, enough)
	prom.WaitUntil(t, "attempts to every locality", perLocality, func(r []promtest.Sample) bool { return len(r) == 4 })
	// And a scrape after them, which the rate-window queries read.
	prom.WaitFor(t, "a scrape after them", fmt.Sprintf(`timestamp(up{job=%q}) > %d`, xdswatchJob, time.Now().Unix()+1))

	ranked, err := prom.Query(panelExpr(t, "Slowest clusters (p99 over the range)", fleet))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, s := range ranked {
		order = append(order, fmt.Sprintf("%s %.3gs", s.Metric[dashboards.LabelBackendService], value(t, s)))
	}
	t.Logf("Slowest clusters (p99 over the range): %v", order)
	if len(ranked) != 3 || ranked[0].Metric[dashboards.LabelBackendService] != "slow" {
		t.Fatalf("Slowest clusters: %v, want slow first of a, b and slow", order)
	}
	if v := value(t, ranked[0]); v < slowDelay.Seconds() {
		t.Errorf("cluster slow's p99 %.3gs, want %v at least", v, slowDelay)
	}
	for _, s := range ranked[1:] {
		if v := value(t, s); v >= slowDelay.Seconds() {
			t.Errorf("cluster %s's p99 %.3gs, want below %v", s.Metric[dashboards.LabelBackendService], v, slowDelay)
		}
	}

	// The README's query ranks them alike.
	plain, err := prom.Query(readmeSlowestQuery)
	if err != nil || len(plain) != 3 || plain[0].Metric[dashboards.LabelBackendService] != "slow" {
		t.Errorf("%s: %v (%v), want cluster slow first of three", readmeSlowestQuery, plain, err)
	}
	for _, s := range plain {
		t.Logf("%s: {grpc_lb_backend_service=%q} %.3g", readmeSlowestQuery, s.Metric[dashboards.LabelBackendService], value(t, s))
	}

	// The p99 over the last minute, as Attempt latency p50 / p99 by
	// cluster draws it, is highest for slow.
	p99, err := prom.Query("topk(1, " + panelRefExpr(t, "Attempt latency p50 / p99 by cluster", "B", fleet) + ")")
	if err != nil || len(p99) != 1 || p99[0].Metric[dashboards.LabelBackendService] != "slow" {
		t.Errorf("the highest p99 by cluster: %v (%v), want cluster slow", p99, err)
	}
	// By locality: slow's zone z1, where the slow backend is.
	byLocality, err := prom.Query("sort_desc(" + panelExpr(t, "Attempt latency p99 by locality", fleet) + ")")
	if err != nil || len(byLocality) != 4 {
		t.Fatalf("p99 by locality: %v (%v), want 4 series", byLocality, err)
	}
	top := byLocality[0].Metric
	t.Logf("slowest locality: %s %s, p99 %.3gs", top[dashboards.LabelBackendService], top[dashboards.LabelLocality], value(t, byLocality[0]))
	if top[dashboards.LabelBackendService] != "slow" || top[dashboards.LabelLocality] != `{region="r", zone="z1", sub_zone=""}` {
		t.Errorf("the slowest locality is %v, want zone z1 of cluster slow", top)
	}
	// None failed; each cluster took attempts.
	prom.ExpectLabels(t, "no attempt failed", panelExpr(t, "Attempt error rate by cluster", fleet)+" == 0", dashboards.LabelBackendService, "a", "b", "slow")
	prom.ExpectLabels(t, "attempts by cluster", panelExpr(t, "Attempts by cluster", fleet)+" > 0", dashboards.LabelBackendService, "a", "b", "slow")
	watch.Stop(t)
	prom.Stop(t)
}
