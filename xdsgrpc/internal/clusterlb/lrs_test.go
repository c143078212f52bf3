package clusterlb_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/lrsserver"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/lrs"
	"github.com/xdslens/xdslens/xdsgrpc/internal/callctx"
	"github.com/xdslens/xdslens/xdsgrpc/internal/clusterlb"
)

// loadTotals sums what the LRS server received for one cluster and EDS
// service.
type loadTotals struct {
	issued, succeeded, errored map[string]uint64 // by zone
	dropped                    uint64
	byCategory                 map[string]uint64
	maxInProgress              map[string]uint64
	metricCount                map[string]uint64 // of the named metric "calls", by zone
	metricSum                  map[string]float64
}

func sumReports(reports []lrsserver.Report, cluster, service string) loadTotals {
	t := loadTotals{issued: map[string]uint64{}, succeeded: map[string]uint64{}, errored: map[string]uint64{},
		byCategory: map[string]uint64{}, maxInProgress: map[string]uint64{},
		metricCount: map[string]uint64{}, metricSum: map[string]float64{}}
	for _, r := range reports {
		for _, cs := range r.Stats {
			if cs.GetClusterName() != cluster || cs.GetClusterServiceName() != service {
				continue
			}
			t.dropped += cs.GetTotalDroppedRequests()
			for _, d := range cs.GetDroppedRequests() {
				t.byCategory[d.GetCategory()] += d.GetDroppedCount()
			}
			for _, ls := range cs.GetUpstreamLocalityStats() {
				addLocality(&t, ls)
			}
		}
	}
	return t
}

func addLocality(t *loadTotals, ls *endpointv3.UpstreamLocalityStats) {
	z := ls.GetLocality().GetZone()
	t.issued[z] += ls.GetTotalIssuedRequests()
	t.succeeded[z] += ls.GetTotalSuccessfulRequests()
	t.errored[z] += ls.GetTotalErrorRequests()
	t.maxInProgress[z] = max(t.maxInProgress[z], ls.GetTotalRequestsInProgress())
	for _, m := range ls.GetLoadMetricStats() {
		if m.GetMetricName() == "calls" {
			t.metricCount[z] += m.GetNumRequestsFinishedWithMetric()
			t.metricSum[z] += m.GetTotalMetricValue()
		}
	}
}

func sum(m map[string]uint64) (n uint64) {
	for _, v := range m {
		n += v
	}
	return n
}

// The load of a cluster with lrs_server goes, through a real xdsclient,
// to a real LRS server: calls issued, succeeded, failed and in progress
// per locality, drops by category and circuit-breaking drops; the report
// stream ends when the channel closes.
func TestLoadReports(t *testing.T) {
	ctx := xdstest.Context(t)
	svc, srv, client := startLRS(t, ctx)

	a, b := startBackend(t, "a"), startBackend(t, "b")
	leaf := withDrops(edsCluster("c1", locality("za", 0, 1, a), locality("zb", 0, 1, b)), dropOf("lb", 1))
	leaf.Cluster.LRSServer, leaf.Cluster.EDSServiceName, leaf.Cluster.MaxRequests = true, "eds-1", 1
	leaf.Server = srv.Addr()
	var dropping atomic.Bool
	cfg := config("c1", leaf)
	cfg.LoadReporter = client
	cfg.Rand = func(n uint32) uint32 {
		if dropping.Load() {
			return 0
		}
		return n - 1
	}
	ch := dial(t, cfg)

	// Where each call went, by the RPC's Call.
	issued, succeeded, errored := map[string]uint64{}, map[string]uint64{}, map[string]uint64{}
	call := func(req *testgrpc.SimpleRequest) {
		var rec callctx.Call
		_, err := testgrpc.NewTestServiceClient(ch.cc).UnaryCall(callctx.With(ctx, &rec), req, grpc.WaitForReady(true))
		z := rec.Locality.Zone
		issued[z]++
		if err == nil {
			succeeded[z]++
		} else {
			errored[z]++
		}
	}
	// At least 10 successful calls, and more until both localities have
	// had one: a locality is picked once its backend is ready, and under
	// load one can be ready well before the other.
	for n := 0; n < 10 || issued["za"] == 0 || issued["zb"] == 0; n++ {
		if ctx.Err() != nil {
			t.Fatalf("calls by zone %v: both localities should have had some", issued)
		}
		call(&testgrpc.SimpleRequest{})
	}
	for range 4 {
		call(&testgrpc.SimpleRequest{ResponseStatus: &testgrpc.EchoStatus{Code: int32(codes.Internal), Message: "failed on purpose"}})
	}
	dropping.Store(true)
	for range 3 {
		if _, err := ch.call(ctx, grpc.WaitForReady(true)); err == nil {
			t.Fatal("RPC not dropped")
		}
	}
	dropping.Store(false)
	backendOf := map[string]*backend{"za": a, "zb": b}
	var rec callctx.Call
	errc := make(chan error, 1)
	go func() {
		_, err := ch.call(callctx.With(withBlock(ctx), &rec), grpc.WaitForReady(true))
		errc <- err
	}()
	var blockedZone string
	select {
	case <-a.entered:
		blockedZone = "za"
	case <-b.entered:
		blockedZone = "zb"
	case <-ctx.Done():
		t.Fatal("the blocking call never reached a backend")
	}
	if err := svc.Wait(ctx, func() bool {
		return sumReports(svc.Reports(), "c1", "eds-1").maxInProgress[blockedZone] == 1
	}); err != nil {
		t.Fatalf("no report with the blocked call in progress: %v", err)
	}
	for range 2 {
		if _, err := ch.call(ctx, grpc.WaitForReady(true)); err == nil {
			t.Fatal("RPC not refused by the circuit breaker")
		}
	}
	backendOf[blockedZone].unblock()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	issued[blockedZone]++
	succeeded[blockedZone]++

	if err := svc.Wait(ctx, func() bool {
		got := sumReports(svc.Reports(), "c1", "eds-1")
		return sum(got.succeeded)+sum(got.errored) == sum(issued) && got.dropped == 5
	}); err != nil {
		t.Fatalf("the reports never added up to %d calls and 5 drops: %+v: %v", sum(issued), sumReports(svc.Reports(), "c1", "eds-1"), err)
	}
	got := sumReports(svc.Reports(), "c1", "eds-1")
	for _, z := range []string{"za", "zb"} {
		if got.issued[z] != issued[z] || got.succeeded[z] != succeeded[z] || got.errored[z] != errored[z] {
			t.Errorf("zone %s: reported %d issued, %d succeeded, %d failed; want %d, %d, %d",
				z, got.issued[z], got.succeeded[z], got.errored[z], issued[z], succeeded[z], errored[z])
		}
		if got.metricCount[z] != issued[z] || got.metricSum[z] != float64(issued[z]) {
			t.Errorf("zone %s: ORCA metric \"calls\" reported by %d calls summing to %v, want %d and %d",
				z, got.metricCount[z], got.metricSum[z], issued[z], issued[z])
		}
	}
	if got.dropped != 5 || got.byCategory["lb"] != 3 || len(got.byCategory) != 1 {
		t.Errorf("reported %d drops, by category %v; want 5, 3 in lb (and 2 circuit-breaking drops in none)", got.dropped, got.byCategory)
	}

	ch.cc.Close()
	if err := svc.Wait(ctx, func() bool { return svc.Open() == 0 }); err != nil {
		t.Errorf("the LRS stream stayed open after the channel closed: %v", err)
	}
}

// startLRS starts an LRS server that asks for reports every 20ms, and an
// xdsclient whose bootstrap names it: the LoadReporter of a Config whose
// leaves have it as their Server. The server stops when the test ends.
func startLRS(t *testing.T, ctx context.Context) (*lrsserver.Service, *lrsserver.Server, *xdsclient.Client) {
	t.Helper()
	svc := lrsserver.NewService(lrsserver.Config{Interval: 20 * time.Millisecond, SendAll: true})
	srv, err := lrsserver.Listen(ctx, "127.0.0.1:0", svc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	client := xdstest.NewClient(t, xdstest.Bootstrap{Servers: []string{srv.Addr()}, Node: `{"id": "test-node"}`}.Parse(t), xdstest.ClientOptions()...)
	return svc, srv, client
}

// A LoadReporter that fails leaves the cluster usable, and the
// LoadReportFailed hook says why.
func TestLoadReportFailure(t *testing.T) {
	ctx := xdstest.Context(t)
	a := startBackend(t, "a")
	leaf := edsCluster("c1", locality("z", 0, 1, a))
	leaf.Cluster.LRSServer = true
	leaf.Server = "nowhere:443"
	var failed atomic.Value
	cfg := config("c1", leaf)
	cfg.LoadReporter = failingReporter{}
	cfg.Hooks = &clusterlb.Hooks{LoadReportFailed: func(i clusterlb.LoadReportErrorInfo) { failed.Store(i) }}
	if got := dial(t, cfg).mustCall(t, ctx); got != "a" {
		t.Errorf("RPC answered by %q", got)
	}
	if i, _ := failed.Load().(clusterlb.LoadReportErrorInfo); i.Leaf != "c1" || i.Server != "nowhere:443" || i.Err == nil {
		t.Errorf("LoadReportFailed got %+v, want leaf c1, server nowhere:443 and an error", i)
	}
}

type failingReporter struct{}

func (failingReporter) ReportLoad(server, cluster, service string) (*lrs.ClusterLoad, func(), error) {
	return nil, nil, errUnreachable
}
