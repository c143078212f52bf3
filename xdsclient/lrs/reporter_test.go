package lrs_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/lrsserver"
	"github.com/xdslens/xdslens/xdsclient/lrs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit)) }

const interval = 50 * time.Millisecond

var (
	east = lrs.Locality{Region: "us", Zone: "east-1", SubZone: "a"}
	west = lrs.Locality{Region: "us", Zone: "west-1"}
)

// setup serves svc on loopback and starts a Reporter of store to it,
// stopped (and its connection closed) when the test ends.
func setup(t *testing.T, svc *lrsserver.Service, store *lrs.Store, opts ...lrs.Option) (*lrsserver.Server, *lrs.Reporter) {
	t.Helper()
	srv, err := lrsserver.Listen(context.Background(), "127.0.0.1:0", svc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	cc, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	opts = append([]lrs.Option{lrs.WithBackoff(func(int) time.Duration { return 10 * time.Millisecond })}, opts...)
	r := lrs.Start(cc, store, &corev3.Node{Id: "node-1"}, opts...)
	t.Cleanup(r.Stop)
	return srv, r
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// issued sums total_issued_requests over reports, for one cluster or all
// ("").
func issued(reports []lrsserver.Report, cluster string) uint64 {
	var n uint64
	for _, r := range reports {
		for _, cs := range r.Stats {
			if cluster != "" && cs.GetClusterName() != cluster {
				continue
			}
			for _, ls := range cs.GetUpstreamLocalityStats() {
				n += ls.GetTotalIssuedRequests()
			}
		}
	}
	return n
}

// withStats returns the reports that carry cluster stats.
func withStats(reports []lrsserver.Report) []lrsserver.Report {
	var out []lrsserver.Report
	for _, r := range reports {
		if len(r.Stats) > 0 {
			out = append(out, r)
		}
	}
	return out
}

func waitReports(t *testing.T, ctx context.Context, svc *lrsserver.Service, what string, cond func([]lrsserver.Report) bool) []lrsserver.Report {
	t.Helper()
	var got []lrsserver.Report
	if err := svc.Wait(ctx, func() bool { got = svc.Reports(); return cond(got) }); err != nil {
		t.Fatalf("waiting for %s: %v; reports so far: %v", what, err, got)
	}
	return got
}

func TestReportCarriesWhatWasRecorded(t *testing.T) {
	ctx := testContext(t)
	svc := lrsserver.NewService(lrsserver.Config{Interval: interval, SendAll: true})
	store := lrs.NewStore()
	load := store.Cluster("c1", "eds-1")
	for range 3 {
		load.CallStarted(east)
	}
	load.CallFinished(east, nil)
	load.CallFinished(east, errors.New("boom"))
	load.CallServerLoad(east, "cpu", 0.5)
	load.CallServerLoad(east, "cpu", 0.25)
	load.CallStarted(west)
	load.CallFinished(west, nil)
	load.CallDropped("throttle")
	load.CallDropped("throttle")
	load.CallDropped("")
	// A finish or a load in a locality where nothing started is ignored.
	load.CallFinished(lrs.Locality{Region: "nowhere"}, nil)
	load.CallServerLoad(lrs.Locality{Region: "nowhere"}, "cpu", 9)
	setup(t, svc, store)

	reports := waitReports(t, ctx, svc, "a report with stats", func(r []lrsserver.Report) bool { return len(withStats(r)) > 0 })
	got := withStats(reports)[0].Stats
	want := []*endpointv3.ClusterStats{{
		ClusterName:          "c1",
		ClusterServiceName:   "eds-1",
		TotalDroppedRequests: 3,
		DroppedRequests:      []*endpointv3.ClusterStats_DroppedRequests{{Category: "throttle", DroppedCount: 2}},
		UpstreamLocalityStats: []*endpointv3.UpstreamLocalityStats{
			{
				Locality:                &corev3.Locality{Region: "us", Zone: "east-1", SubZone: "a"},
				TotalIssuedRequests:     3,
				TotalSuccessfulRequests: 1,
				TotalErrorRequests:      1,
				TotalRequestsInProgress: 1,
				LoadMetricStats:         []*endpointv3.EndpointLoadMetricStats{{MetricName: "cpu", NumRequestsFinishedWithMetric: 2, TotalMetricValue: 0.75}},
			},
			{
				Locality:                &corev3.Locality{Region: "us", Zone: "west-1"},
				TotalIssuedRequests:     1,
				TotalSuccessfulRequests: 1,
			},
		},
	}}
	if len(got) != 1 {
		t.Fatalf("first report has %d clusters, want 1: %v", len(got), got)
	}
	if iv := got[0].GetLoadReportInterval().AsDuration(); iv < interval {
		t.Errorf("load_report_interval %v, want at least the server's %v", iv, interval)
	}
	gotCS := proto.Clone(got[0]).(*endpointv3.ClusterStats)
	gotCS.LoadReportInterval = nil
	if !proto.Equal(gotCS, want[0]) {
		t.Errorf("first report:\n%s\nwant:\n%s", prototext.Format(gotCS), prototext.Format(want[0]))
	}

	// Only what happened since: the call still in progress, nothing else,
	// until it finishes.
	load.CallFinished(east, nil)
	reports = waitReports(t, ctx, svc, "the report of the last call", func(r []lrsserver.Report) bool {
		for _, rep := range r {
			for _, cs := range rep.Stats {
				for _, ls := range cs.GetUpstreamLocalityStats() {
					if ls.GetTotalSuccessfulRequests() == 1 && ls.GetTotalIssuedRequests() == 0 && ls.GetTotalRequestsInProgress() == 0 {
						return true
					}
				}
			}
		}
		return false
	})
	if n := issued(reports, ""); n != 4 {
		t.Errorf("issued over all reports = %d, want 4", n)
	}

	nodes := svc.Nodes()
	if len(nodes) != 1 || nodes[0].GetId() != "node-1" || !slices.Contains(nodes[0].GetClientFeatures(), lrs.FeatureSendAllClusters) {
		t.Errorf("node of the stream = %v, want id node-1 with feature %q", nodes, lrs.FeatureSendAllClusters)
	}
}

func TestIntervalHonouredAndChanged(t *testing.T) {
	ctx := testContext(t)
	svc := lrsserver.NewService(lrsserver.Config{Interval: interval, SendAll: true})
	store := lrs.NewStore()
	load := store.Cluster("c1", "")
	load.CallStarted(east) // in progress: every report carries the cluster
	setup(t, svc, store)

	reports := waitReports(t, ctx, svc, "3 reports", func(r []lrsserver.Report) bool { return len(r) >= 3 })
	for _, r := range reports {
		if iv := r.Stats[0].GetLoadReportInterval().AsDuration(); iv < interval {
			t.Errorf("load_report_interval %v, want at least %v", iv, interval)
		}
	}

	const longer = 4 * interval
	svc.SetConfig(lrsserver.Config{Interval: longer, SendAll: true})
	// Reports already due under the old interval may come; after the
	// first report measured over the new one, every one is.
	reports = waitReports(t, ctx, svc, "a report at the new interval", func(r []lrsserver.Report) bool {
		return r[len(r)-1].Stats[0].GetLoadReportInterval().AsDuration() >= longer
	})
	n := len(reports)
	reports = waitReports(t, ctx, svc, "2 more reports", func(r []lrsserver.Report) bool { return len(r) >= n+2 })
	for _, r := range reports[n:] {
		if iv := r.Stats[0].GetLoadReportInterval().AsDuration(); iv < longer {
			t.Errorf("after the change, load_report_interval %v, want at least %v", iv, longer)
		}
		if gap := r.At.Sub(reports[n-1].At); gap < longer/2 {
			t.Errorf("report %v after the previous one, want about %v", gap, longer)
		}
	}
}

func TestNamedClustersThenSendAll(t *testing.T) {
	ctx := testContext(t)
	svc := lrsserver.NewService(lrsserver.Config{Interval: interval, Clusters: []string{"a"}})
	store := lrs.NewStore()
	a, b := store.Cluster("a", ""), store.Cluster("b", "eds-b")
	for range 2 {
		a.CallStarted(east)
		a.CallFinished(east, nil)
	}
	for range 5 {
		b.CallStarted(west)
		b.CallFinished(west, nil)
	}
	setup(t, svc, store)

	reports := waitReports(t, ctx, svc, "a report of a", func(r []lrsserver.Report) bool { return issued(r, "a") == 2 })
	if n := issued(reports, "b"); n != 0 {
		t.Fatalf("b reported (%d calls) though the server asked for a only", n)
	}
	svc.SetConfig(lrsserver.Config{Interval: interval, SendAll: true})
	reports = waitReports(t, ctx, svc, "a report of b", func(r []lrsserver.Report) bool { return issued(r, "b") > 0 })
	if n := issued(reports, "b"); n != 5 {
		t.Errorf("b: issued %d over all reports, want the 5 kept while it was not asked for", n)
	}
	if n := issued(reports, "a"); n != 2 {
		t.Errorf("a: issued %d over all reports, want 2", n)
	}
	for _, r := range withStats(reports) {
		for _, cs := range r.Stats {
			if cs.GetClusterName() == "b" && cs.GetClusterServiceName() != "eds-b" {
				t.Errorf("b reported with service %q, want eds-b", cs.GetClusterServiceName())
			}
		}
	}
}

func TestServerRestartLosesAndRepeatsNothing(t *testing.T) {
	ctx := testContext(t)
	svc := lrsserver.NewService(lrsserver.Config{Interval: interval, SendAll: true})
	store := lrs.NewStore()
	load := store.Cluster("c1", "")
	record := func(n int) {
		for range n {
			load.CallStarted(east)
			load.CallFinished(east, nil)
		}
	}
	var mu sync.Mutex
	var ends []lrs.StreamEndInfo
	record(3)
	srv, _ := setup(t, svc, store, lrs.WithEvents(lrs.Events{StreamEnded: func(i lrs.StreamEndInfo) {
		mu.Lock()
		ends = append(ends, i)
		mu.Unlock()
	}}))
	waitReports(t, ctx, svc, "3 calls reported", func(r []lrsserver.Report) bool { return issued(r, "") >= 3 })

	srv.Stop()
	record(5) // while the server is down
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	record(2)
	reports := waitReports(t, ctx, svc, "10 calls reported", func(r []lrsserver.Report) bool { return issued(r, "") >= 10 })
	if n := issued(reports, ""); n != 10 {
		t.Fatalf("issued %d over all reports, want exactly 10", n)
	}
	streams := map[int]bool{}
	for _, r := range withStats(reports) {
		streams[r.Stream] = true
	}
	if len(streams) < 2 {
		t.Errorf("reports came on streams %v, want a new stream after the restart", streams)
	}
	record(1)
	reports = waitReports(t, ctx, svc, "11 calls reported", func(r []lrsserver.Report) bool { return issued(r, "") >= 11 })
	if n := issued(reports, ""); n != 11 {
		t.Errorf("issued %d over all reports, want exactly 11", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ends) == 0 || !ends[0].Created || !ends[0].ResponseReceived {
		t.Errorf("stream end events = %+v, want the first stream's end, after a response", ends)
	}
}

func TestStopSendsFinalReportAndEndsStream(t *testing.T) {
	ctx := testContext(t)
	svc := lrsserver.NewService(lrsserver.Config{Interval: time.Hour, SendAll: true})
	store := lrs.NewStore()
	load := store.Cluster("c1", "")
	var mu sync.Mutex
	var sent []lrs.ReportInfo
	var started int
	responded := make(chan lrs.ResponseInfo, 1)
	_, r := setup(t, svc, store, lrs.WithEvents(lrs.Events{
		StreamStarted:    func(lrs.StreamInfo) { mu.Lock(); started++; mu.Unlock() },
		ResponseReceived: func(i lrs.ResponseInfo) { responded <- i },
		ReportSent:       func(i lrs.ReportInfo) { mu.Lock(); sent = append(sent, i); mu.Unlock() },
	}))
	select {
	case i := <-responded:
		if i.Interval != time.Hour || !i.SendAll {
			t.Errorf("response = %+v, want an hour's interval and send_all_clusters", i)
		}
	case <-ctx.Done():
		t.Fatal("no response reached the reporter")
	}
	load.CallStarted(east)
	load.CallFinished(east, errors.New("unavailable"))
	load.CallDropped("lb")
	r.Stop()
	reports := waitReports(t, ctx, svc, "the final report", func(r []lrsserver.Report) bool { return len(withStats(r)) > 0 })
	if err := svc.Wait(ctx, func() bool { return svc.Open() == 0 }); err != nil {
		t.Fatalf("stream still open after Stop: %v", err)
	}
	cs := withStats(reports)[0].Stats[0]
	if cs.GetTotalDroppedRequests() != 1 || cs.GetUpstreamLocalityStats()[0].GetTotalErrorRequests() != 1 {
		t.Errorf("final report = %v, want 1 error and 1 drop", cs)
	}
	mu.Lock()
	defer mu.Unlock()
	if started != 1 || len(sent) != 1 || !sent[0].Final || sent[0].Errored != 1 || sent[0].Dropped != 1 || sent[0].Issued != 1 || sent[0].Interval != time.Hour || sent[0].Clusters != 1 {
		t.Errorf("events: %d streams started, reports %+v; want 1 stream and one final report of 1 call, 1 error, 1 drop", started, sent)
	}
}

// Stop from one of the Reporter's events returns at once (it would wait
// for its own goroutine otherwise); the final report is written and the
// stream ended once the event returns, then WithEnd's func runs, last;
// Stop from elsewhere afterwards returns once all that is done.
func TestStopFromAnEvent(t *testing.T) {
	ctx := testContext(t)
	svc := lrsserver.NewService(lrsserver.Config{Interval: time.Hour, SendAll: true})
	store := lrs.NewStore()
	store.Cluster("c1", "").CallDropped("lb")
	var r *lrs.Reporter
	set := make(chan struct{})
	stopped := make(chan bool, 1)
	var mu sync.Mutex
	var order []string
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	_, r = setup(t, svc, store, lrs.WithEvents(lrs.Events{
		ResponseReceived: func(lrs.ResponseInfo) {
			<-set
			r.Stop()
			stopped <- r.Running()
		},
		ReportSent:  func(i lrs.ReportInfo) { note(fmt.Sprintf("report final=%v", i.Final)) },
		StreamEnded: func(i lrs.StreamEndInfo) { note("stream ended: " + i.Err.Error()) },
	}), lrs.WithEnd(func() { note("end") }))
	close(set)
	select {
	case running := <-stopped:
		if !running {
			t.Error("Running() = false inside an event")
		}
	case <-ctx.Done():
		t.Fatal("Stop from an event never returned")
	}
	if r.Running() {
		t.Error("Running() = true outside the events")
	}
	r.Stop()
	mu.Lock()
	got := strings.Join(order, "; ")
	mu.Unlock()
	if want := "report final=true; stream ended: " + lrs.ErrStopped.Error() + "; end"; got != want {
		t.Errorf("after Stop from an event, then from the test: %s; want %s", got, want)
	}
	if err := svc.Wait(ctx, func() bool { return svc.Open() == 0 }); err != nil {
		t.Fatalf("stream still open after Stop: %v", err)
	}
}

func TestInvalidResponseEndsStream(t *testing.T) {
	ctx := testContext(t)
	svc := lrsserver.NewService(lrsserver.Config{Interval: 0, SendAll: true})
	ended := make(chan lrs.StreamEndInfo, 10)
	setup(t, svc, lrs.NewStore(), lrs.WithEvents(lrs.Events{StreamEnded: func(i lrs.StreamEndInfo) {
		select {
		case ended <- i:
		default:
		}
	}}))
	select {
	case i := <-ended:
		if !i.Created || i.ResponseReceived || i.Err == nil || !strings.Contains(i.Err.Error(), "load_reporting_interval 0s: must be positive") || i.Backoff == 0 {
			t.Errorf("stream end = %+v, want no valid response, an error naming load_reporting_interval, and a backoff", i)
		}
	case <-ctx.Done():
		t.Fatal("the stream did not end after an invalid response")
	}
}

func TestStopWhileServerUnreachable(t *testing.T) {
	// Nothing listens there: the stream is never created.
	cc, err := grpc.NewClient("127.0.0.1:1", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ended := make(chan lrs.StreamEndInfo, 1)
	r := lrs.Start(cc, lrs.NewStore(), nil, lrs.WithEvents(lrs.Events{StreamEnded: func(i lrs.StreamEndInfo) {
		select {
		case ended <- i:
		default:
		}
	}}), lrs.WithBackoff(func(int) time.Duration { return time.Hour }))
	var i lrs.StreamEndInfo
	select {
	case i = <-ended:
	case <-testContext(t).Done():
		t.Fatal("the attempt to create the stream did not end")
	}
	if i.Created || i.Err == nil || i.Backoff != time.Hour {
		t.Errorf("stream end = %+v, want a stream not created, its error, and the backoff", i)
	}
	r.Stop() // returns though the backoff has an hour to run
	r.Stop()
}

func TestNodeIsNotModified(t *testing.T) {
	node := &corev3.Node{Id: "n", ClientFeatures: []string{"f"}}
	want := proto.Clone(node)
	svc := lrsserver.NewService(lrsserver.Config{Interval: interval, SendAll: true})
	srv, err := lrsserver.Listen(context.Background(), "127.0.0.1:0", svc)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	cc, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	r := lrs.Start(cc, lrs.NewStore(), node)
	defer r.Stop()
	ctx := testContext(t)
	if err := svc.Wait(ctx, func() bool { return len(svc.Nodes()) == 1 }); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(node, want) {
		t.Errorf("the caller's node changed to %v", node)
	}
	if got := svc.Nodes()[0].GetClientFeatures(); !slices.Equal(got, []string{"f", lrs.FeatureSendAllClusters}) {
		t.Errorf("client features sent = %q", got)
	}
}
