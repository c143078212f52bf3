package dashboards_test

// The end-to-end test: xdswatch (this test binary, run as the command) watches
// clusters on scripted ADS servers through a scenario that leaves one
// cache entry in each of the nine cache states, a real Prometheus scrapes
// its metrics, and every panel query and every alert expression is
// evaluated through Prometheus's HTTP API.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/dashboards"
	"github.com/xdslens/xdslens/internal/testing/promtest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

const (
	cdsURL = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	// cdsType is the grpc_xds_resource_type label of clusters.
	cdsType = "envoy.config.cluster.v3.Cluster"
	// slowAnswer is how long the scripted primary server waits before it
	// answers the one subscription the scenario makes slow: the stimulus
	// for the fetch latency alert, whose end-to-end SLO is below it.
	slowAnswer = 300 * time.Millisecond
	// e2eSLO is the latency SLO of the end-to-end alert rules.
	e2eSLO = 200 * time.Millisecond
	// rateWindow stands for $__rate_interval: longer than the scenario, so
	// that every rate covers all of it.
	rateWindow = "1m"
	// e2eShortWindow is the data-plane alerts' short window: five scrapes.
	e2eShortWindow = 5 * time.Second
)

// Cluster names of the scenario on the primary server (authority #old),
// with the cache state each ends in.
const (
	cAcked        = "c-acked"         // acked
	cNacked       = "c-nacked"        // nacked: only an invalid version was sent
	cNackedCached = "c-nacked-cached" // nacked_but_cached: valid, then invalid
	cError        = "c-error"         // received_error: only a TP3 error
	cErrorCached  = "c-error-cached"  // received_error_but_cached: valid, then a TP3 error
	cDeleted      = "c-deleted"       // does_not_exist_but_cached: valid, then left out
	cMissing      = "c-missing"       // does_not_exist: never sent
	cSlow         = "c-slow"          // acked, answered after slowAnswer
	// cInterrupted is subscribed on a stream that then ends before the
	// answer (a fetch interrupted); later left out: does_not_exist.
	cInterrupted = "c-interrupted"
)

// xdstp:// clusters of the other authorities.
func xdstpCluster(authority, name string) string {
	return "xdstp://" + authority + "/" + cdsType + "/" + name
}

var (
	// cRequested is on an authority whose only server is down: requested.
	cRequested = xdstpCluster("dead.example", "c-requested")
	// cFallback is on an authority whose primary is down: acked from the
	// fallback server.
	cFallback = xdstpCluster("fb.example", "c-fallback")
	// cTimeout is on an authority whose server has
	// resource_timer_is_transient_error and never answers: timeout.
	cTimeout = xdstpCluster("timeout.example", "c-timeout")
)

// cluster returns a valid cluster; xdstp:// clusters get the EDS service
// name they need.
func cluster(name string) *clusterv3.Cluster {
	eds := ""
	if strings.HasPrefix(name, "xdstp://") {
		eds = strings.Replace(name, cdsType, "envoy.config.endpoint.v3.ClusterLoadAssignment", 1)
	}
	return controlplane.Cluster(name, eds)
}

// invalidCluster returns a cluster the client rejects.
func invalidCluster(name string) *clusterv3.Cluster {
	c := cluster(name)
	c.TransportSocketMatches = []*clusterv3.Cluster_TransportSocketMatch{{Name: "unsupported"}}
	return c
}

// firstResponse holds valid versions of every cluster that ends cached,
// and the first answers of the clusters that are never valid: an invalid
// version of cNacked, an error for cError.
func firstResponse() *discoveryv3.DiscoveryResponse {
	r := xdstest.Response(cdsURL, "1",
		cluster(cAcked), cluster(cNackedCached), cluster(cErrorCached), cluster(cDeleted), invalidCluster(cNacked))
	r.ResourceErrors = []*discoveryv3.ResourceError{
		xdstest.ResourceError(cError, codes.PermissionDenied, "e2e: denied"),
	}
	return r
}

// secondResponse leaves every primary cluster in its final state: full
// state for CDS, so the clusters left out are deleted.
func secondResponse(extra ...proto.Message) *discoveryv3.DiscoveryResponse {
	res := append([]proto.Message{cluster(cAcked), invalidCluster(cNacked), invalidCluster(cNackedCached)}, extra...)
	r := xdstest.Response(cdsURL, "2", res...)
	r.ResourceErrors = []*discoveryv3.ResourceError{
		xdstest.ResourceError(cError, codes.PermissionDenied, "e2e: denied"),
		xdstest.ResourceError(cErrorCached, codes.PermissionDenied, "e2e: denied"),
	}
	return r
}

func TestEndToEndOnPrometheus(t *testing.T) {
	t.Parallel() // waits on Prometheus's scrapes and rule evaluations
	if testing.Short() {
		t.Skip("end-to-end test: builds xdswatch and runs Prometheus")
	}
	promBin := promtest.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()

	// Scripted servers: the primary, a fallback, one that never answers,
	// and two addresses where nothing listens.
	primary := xdstest.NewADSServer(t)
	fallback := xdstest.NewADSServer(t)
	silent := xdstest.NewADSServer(t)
	dead, deadPrimary := xdstest.ClosedAddr(t), xdstest.ClosedAddr(t)
	bootstrap := fmt.Sprintf(`{
  "xds_servers": [%s],
  "node": {"id": "dashboards-e2e"},
  "authorities": {
    "dead.example": {"xds_servers": [%s]},
    "fb.example": {"xds_servers": [%s, %s]},
    "timeout.example": {"xds_servers": [%s]}
  }
}`, serverJSON(primary.Addr()), serverJSON(dead), serverJSON(deadPrimary), serverJSON(fallback.Addr()),
		serverJSON(silent.Addr(), "resource_timer_is_transient_error"))
	bootstrapFile := filepath.Join(dir, "bootstrap.json")
	if err := os.WriteFile(bootstrapFile, []byte(bootstrap), 0o644); err != nil {
		t.Fatal(err)
	}

	// The fallback server answers; the silent one stays silent.
	go func() {
		st, err := fallback.NextStream(ctx)
		if err != nil {
			return
		}
		if _, err := recvNaming(ctx, st, cFallback); err != nil {
			return
		}
		_ = st.Send(xdstest.Response(cdsURL, "fb-1", cluster(cFallback)))
	}()

	// xdswatch, and Prometheus scraping it with the alert rules at
	// end-to-end thresholds.
	start := time.Now()
	watch := startXdswatch(t,
		"--bootstrap", bootstrapFile, "--target", "e2e", "--metrics-addr", "127.0.0.1:0",
		"--resource-timeout", "2s", "--output", "json", "--stdin",
		"cds:"+cAcked, "cds:"+cNacked, "cds:"+cNackedCached, "cds:"+cError, "cds:"+cErrorCached,
		"cds:"+cDeleted, "cds:"+cMissing, "cds:"+cRequested, "cds:"+cFallback, "cds:"+cTimeout)
	if watch.metrics == "" {
		t.Skip("xdswatch does not serve metrics (--metrics-addr gave no address)")
	}
	prom := startPrometheus(t, promBin, dir, watch.metrics)

	// The primary: two server failures (streams that end before a
	// response), with a good stream before each, then the final state.
	serve := func(st *xdstest.Stream) {
		t.Helper()
		mustRecv(t, ctx, st)
		mustSend(t, ctx, st, firstResponse())
		mustSend(t, ctx, st, secondResponse())
	}
	failures := fmt.Sprintf(`%s{grpc_xds_server=%q}`, dashboards.MetricServerFailures, primary.Addr())
	st := mustStream(t, ctx, primary)
	serve(st)
	watch.command(t, "+cds:"+cInterrupted)
	if _, err := recvNaming(ctx, st, cInterrupted); err != nil {
		t.Fatal(err)
	}
	st.End(status.Error(codes.Unavailable, "e2e: stream reset after a response"))
	st = mustStream(t, ctx, primary)
	mustRecv(t, ctx, st)
	st.End(status.Error(codes.Unavailable, "e2e: stream reset before a response"))
	// The counter must be scraped at 1 before it reaches 2, or increase()
	// cannot see the second failure.
	prom.WaitFor(t, "first server failure scraped", failures+" >= 1")
	st = mustStream(t, ctx, primary)
	serve(st)
	st.End(status.Error(codes.Unavailable, "e2e: stream reset after a response"))
	st = mustStream(t, ctx, primary)
	mustRecv(t, ctx, st)
	st.End(status.Error(codes.Unavailable, "e2e: stream reset before a response"))
	st = mustStream(t, ctx, primary)
	serve(st)

	// A slow answer to a new subscription.
	watch.command(t, "+cds:"+cSlow)
	if _, err := recvNaming(ctx, st, cSlow); err != nil {
		t.Fatal(err)
	}
	timer := time.NewTimer(slowAnswer)
	<-timer.C
	mustSend(t, ctx, st, secondResponse(cluster(cSlow)))

	// Every cache state is visible in Prometheus.
	states := `count by (grpc_xds_cache_state) (grpc_xds_client_resources{grpc_target="e2e"})`
	prom.WaitUntil(t, "all nine cache states", states, func(r []promtest.Sample) bool {
		return len(promtest.LabelValues(r, dashboards.LabelCacheState)) == len(dashboards.CacheStates)
	})

	// Every panel query returns series with the fleet variables set to
	// the xdswatch process, and none of another job (Prometheus scrapes
	// itself too); legends name the instance of per-process series.
	fleet := fleetOf(watch)
	for _, q := range allPanelQueries(t) {
		if readsDataPlane(q.expr) || readsServer(q.expr) {
			continue // TestDataPlaneOnPrometheus, TestServerOnPrometheus
		}
		expr := substitute(q.expr, rateWindow, fleet)
		if strings.HasPrefix(expr, "absent(") {
			// NO TARGETS: nothing while the job has a target, 1 for a job
			// that has none.
			if r, err := prom.Query(expr); err != nil || len(r) != 0 {
				t.Errorf("%s: %q gives %v (%v), want nothing", q.name(), expr, r, err)
			}
			prom.WaitFor(t, q.name()+" for a job without targets",
				substitute(q.expr, rateWindow, map[string]string{"job": "no-such-job"}))
			continue
		}
		expectPanelData(t, prom, q, expr)
	}
	// Every query drops everything but the selected job: with a job that
	// does not exist, no panel has data.
	for _, q := range allPanelQueries(t) {
		if strings.HasPrefix(q.expr, "absent(") || readsDataPlane(q.expr) || readsServer(q.expr) {
			continue
		}
		expectNoOtherJob(t, prom, q)
	}

	// Selected panels show what the scenario did.
	prom.ExpectLabels(t, "cache states", states, dashboards.LabelCacheState, dashboards.CacheStates...)
	connected := panelExpr(t, "Server connection", fleet)
	prom.ExpectLabels(t, "disconnected servers", connected+" == 0", dashboards.LabelServer, dead, deadPrimary)
	prom.ExpectLabels(t, "connected servers", connected+" == 1", dashboards.LabelServer, primary.Addr(), fallback.Addr())
	prom.ExpectLabels(t, "server in use for fb.example",
		dashboards.MetricAuthorityServer+`{grpc_xds_authority="fb.example"} == 1`, dashboards.LabelServer, fallback.Addr())
	prom.ExpectLabels(t, "fetch outcomes", `sum by (outcome) (`+dashboards.MetricFetchDuration+`_count)`,
		dashboards.LabelOutcome, "acked", "nacked", "received_error", "does_not_exist", "timeout", "interrupted")
	prom.ExpectLabels(t, "invalid updates", `sum by (grpc_xds_resource_type) (`+dashboards.MetricUpdatesInvalid+`) > 0`,
		dashboards.LabelResourceType, cdsType)
	prom.ExpectLabels(t, "notification kinds", `sum by (kind) (`+dashboards.MetricWatcherNotifications+`) > 0`,
		dashboards.LabelKind, "resource", "resource_error", "ambient_error")

	// A server never reached shows as disconnected all the time.
	prom.ExpectLabels(t, "time disconnected", panelExpr(t, "Time disconnected", fleet)+" == 1",
		dashboards.LabelServer, dead, deadPrimary)

	// Every alert expression fires on what the scenario did, located by
	// its labels, and carries no OpenTelemetry scope label.
	want := map[string]struct {
		label  string
		values []string
	}{
		dashboards.AlertServerDisconnected:    {dashboards.LabelServer, []string{dead, deadPrimary}},
		dashboards.AlertServerFlapping:        {dashboards.LabelServer, []string{primary.Addr()}},
		dashboards.AlertResourcesNACKed:       {dashboards.LabelCacheState, []string{"nacked", "nacked_but_cached"}},
		dashboards.AlertResourcesDoesNotExist: {dashboards.LabelCacheState, []string{"does_not_exist", "does_not_exist_but_cached", "timeout"}},
		dashboards.AlertResourcesError:        {dashboards.LabelCacheState, []string{"received_error", "received_error_but_cached"}},
		dashboards.AlertOnFallback:            {dashboards.LabelServer, []string{fallback.Addr()}},
		dashboards.AlertFetchLatencyHigh:      {dashboards.LabelServer, []string{primary.Addr()}},
	}
	for _, r := range e2eRules().Rules {
		if r.Alert == dashboards.AlertScrapeFailed {
			continue // checked once xdswatch is gone
		}
		if slices.Contains(dataPlaneAlerts, r.Alert) || slices.Contains(serverAlerts, r.Alert) || r.Alert == dashboards.AlertLoadReportingFailing {
			continue // TestDataPlaneOnPrometheus (whose channels report load), TestServerOnPrometheus
		}
		w, ok := want[r.Alert]
		if !ok {
			t.Errorf("alert %s: the scenario does not check it", r.Alert)
			continue
		}
		expectAlert(t, prom, r, w.label, w.values...)
	}
	// Prometheus loaded the rule file and the alerts fire.
	var alerts []string
	for a := range want {
		alerts = append(alerts, a)
	}
	prom.WaitForAlerts(t, alerts)
	// The committed rules, with production thresholds, evaluate cleanly.
	for _, r := range dashboards.AlertRules(dashboards.DefaultAlertOptions()).Rules {
		if _, err := prom.Query(r.Expr); err != nil {
			t.Errorf("committed alert %s: %v", r.Alert, err)
		}
	}

	if dir := os.Getenv("XDSLENS_DASHBOARD_PICTURES"); dir != "" {
		drawPictures(t, prom, dir, "e2e-", start, time.Now(), map[string]string{
			primary.Addr():  "primary",
			fallback.Addr(): "fallback",
			silent.Addr():   "silent",
			dead:            "dead",
			deadPrimary:     "dead primary",
		})
	}

	// xdswatch ends: the stat panels, instant queries, show no connection
	// at all, not the last one; scrape health shows the instance DOWN, and
	// the scrape alert fires for it.
	watch.Stop(t)
	prom.WaitUntil(t, "server connection after xdswatch ended", connected, func(r []promtest.Sample) bool { return len(r) == 0 })
	prom.ExpectLabels(t, "scrape health after xdswatch ended", panelExpr(t, "Scrape health", fleet)+" == 0",
		"instance", watch.metrics)
	for _, r := range e2eRules().Rules {
		if r.Alert == dashboards.AlertScrapeFailed {
			prom.ExpectLabels(t, "alert "+r.Alert, r.Expr, "instance", watch.metrics)
		}
	}
	prom.WaitForAlerts(t, []string{dashboards.AlertScrapeFailed})
	prom.Stop(t)
}

// xdswatchJob is the job name of xdswatch in the Prometheus of the test.
const xdswatchJob = "xdswatch"

// expectPanelData waits until expr, the query q with the fleet variables
// set to the xdswatch process, returns series, and checks that none is of
// another job (Prometheus scrapes itself too) and that the legend names
// the instance of per-process series.
func expectPanelData(t *testing.T, prom *promtest.Server, q panelQuery, expr string) {
	t.Helper()
	r := prom.WaitUntil(t, q.name(), expr, func(r []promtest.Sample) bool { return len(r) > 0 })
	for _, s := range r {
		if j, ok := s.Metric["job"]; ok && j != xdswatchJob {
			t.Errorf("%s: series %v of job %q passes the job filter %q", q.name(), s.Metric, j, xdswatchJob)
		}
		if _, ok := s.Metric["instance"]; ok && !strings.Contains(q.legend, "{{instance}}") && q.panelType != "table" {
			t.Errorf("%s: series %v carry the instance, but the legend %q does not name it", q.name(), s.Metric, q.legend)
		}
	}
}

// expectNoOtherJob checks that q gives nothing for a job that does not
// exist: it selects by the job variable.
func expectNoOtherJob(t *testing.T, prom *promtest.Server, q panelQuery) {
	t.Helper()
	expr := substitute(q.expr, rateWindow, map[string]string{"job": "no-such-job"})
	if r, err := prom.Query(expr); err != nil || len(r) != 0 {
		t.Errorf("%s: %q gives %v (%v) for a job that does not exist", q.name(), expr, r, err)
	}
}

// fleetOf returns the values of the fleet variables that select the
// xdswatch process x. Grafana writes a regular expression into a PromQL
// string, with its backslashes escaped.
func fleetOf(x *xdswatchProcess) map[string]string {
	return map[string]string{"job": xdswatchJob, "instance": strings.ReplaceAll(regexp.QuoteMeta(x.metrics), `\`, `\\`)}
}

// expectAlert checks that the expression of alert r returns series with
// each of values in label, located by job, instance and grpc_target (an
// xDS-enabled server's address for the server alerts), and with no
// OpenTelemetry scope label.
func expectAlert(t *testing.T, prom *promtest.Server, r dashboards.Rule, label string, values ...string) {
	t.Helper()
	prom.ExpectLabels(t, "alert "+r.Alert, r.Expr, label, values...)
	locate := []string{"job", "instance", dashboards.LabelTarget}
	if slices.Contains(serverAlerts, r.Alert) {
		locate[2] = dashboards.LabelAddress
	}
	for _, l := range locate {
		prom.ExpectLabels(t, "alert "+r.Alert+" locates with "+l, r.Expr, l)
	}
	res, err := prom.Query(r.Expr)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res {
		for _, l := range []string{dashboards.LabelScopeName, dashboards.LabelScopeVersion} {
			if _, ok := s.Metric[l]; ok {
				t.Errorf("alert %s: series %v carries %s", r.Alert, s.Metric, l)
			}
		}
	}
}

// panelExpr returns the first query of the panel titled title, with the
// variables substituted (those of set with their values).
func panelExpr(t *testing.T, title string, set ...map[string]string) string {
	t.Helper()
	return panelRefExpr(t, title, "", set...)
}

// panelRefExpr returns the query refID (the first when "") of the panel
// titled title, with the variables substituted (those of set with their
// values).
func panelRefExpr(t *testing.T, title, refID string, set ...map[string]string) string {
	t.Helper()
	for _, q := range allPanelQueries(t) {
		if q.title == title && (refID == "" || q.refID == refID) {
			return substitute(q.expr, rateWindow, set...)
		}
	}
	t.Fatalf("no panel %q with query %q", title, refID)
	return ""
}

// e2eRules are the alert rules with thresholds the scenario crosses within
// seconds.
func e2eRules() dashboards.RuleGroup {
	o := dashboards.DefaultAlertOptions()
	o.DisconnectedFor, o.NACKedFor, o.MissingFor, o.ReceivedErrorFor, o.FallbackFor, o.LatencyFor = 0, 0, 0, 0, 0, 0
	o.ScrapeFailedFor = 0
	o.FlapWindow, o.FlapFailures = time.Minute, 1
	o.LatencyWindow, o.LatencySLO = time.Minute, e2eSLO
	o.LoadReportingWindow, o.LoadReportingFor = time.Minute, 0
	d := &o.DataPlane
	d.RateWindow, d.ShortWindow = time.Minute, e2eShortWindow
	d.FailingFor, d.BackendErrorFor, d.DroppedFor, d.CircuitBreakingFor, d.NearMaxRequestsFor, d.EjectedFor = 0, 0, 0, 0, 0, 0
	v := &o.Server
	v.RateWindow = time.Minute
	v.NotServingFor, v.HandshakeFailuresFor, v.DenialSpikeFor = 0, 0, 0
	v.DenialMinRate = 0.01
	return dashboards.AlertRules(o)
}

// serverJSON is one bootstrap server entry.
func serverJSON(addr string, features ...string) string {
	f, _ := json.Marshal(append([]string{}, features...))
	return fmt.Sprintf(`{"server_uri": %q, "channel_creds": [{"type": "insecure"}], "server_features": %s}`, addr, f)
}

func mustStream(t *testing.T, ctx context.Context, s *xdstest.ADSServer) *xdstest.Stream {
	t.Helper()
	st, err := s.NextStream(ctx)
	if err != nil {
		t.Fatalf("waiting for an ADS stream: %v", err)
	}
	return st
}

// mustRecv reads the next CDS request.
func mustRecv(t *testing.T, ctx context.Context, st *xdstest.Stream) *discoveryv3.DiscoveryRequest {
	t.Helper()
	req, err := st.RecvType(ctx, cdsURL)
	if err != nil {
		t.Fatalf("waiting for a CDS request: %v", err)
	}
	return req
}

// mustSend sends resp and reads the ACK or NACK that answers it.
func mustSend(t *testing.T, ctx context.Context, st *xdstest.Stream, resp *discoveryv3.DiscoveryResponse) {
	t.Helper()
	if err := st.Send(resp); err != nil {
		t.Fatalf("send: %v", err)
	}
	for {
		req := mustRecv(t, ctx, st)
		if req.GetResponseNonce() == st.LastNonce() {
			return
		}
	}
}

// recvNaming reads CDS requests until one subscribes to name.
func recvNaming(ctx context.Context, st *xdstest.Stream, name string) (*discoveryv3.DiscoveryRequest, error) {
	for {
		req, err := st.RecvType(ctx, cdsURL)
		if err != nil {
			return nil, fmt.Errorf("waiting for a CDS request naming %s: %w", name, err)
		}
		if slices.Contains(req.GetResourceNames(), name) {
			return req, nil
		}
	}
}

// xdswatchProcess is a running xdswatch.
type xdswatchProcess struct {
	*promtest.Process
	stdin   io.WriteCloser
	metrics string
}

// startXdswatch runs xdswatch and reads its listening line.
func startXdswatch(t *testing.T, args ...string) *xdswatchProcess {
	t.Helper()
	return startXdswatchLogging(t, nil, args...)
}

// startXdswatchLogging runs xdswatch, with its standard error written to
// stderr too when it is not nil, and reads its listening line.
func startXdswatchLogging(t *testing.T, stderrToo io.Writer, args ...string) *xdswatchProcess {
	t.Helper()
	cmd := xdswatchCommand(t, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &xdstest.SyncBuffer{}
	cmd.Stderr = stderr
	if stderrToo != nil {
		cmd.Stderr = io.MultiWriter(stderr, stderrToo)
	}
	p := promtest.Start(t, "xdswatch", cmd)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("xdswatch stderr:\n%s", stderr.String())
		}
	})
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	if !lines.Scan() {
		t.Fatalf("xdswatch printed no listening line: %v\n%s", lines.Err(), stderr.String())
	}
	var listening struct {
		Event   string `json:"event"`
		Metrics string `json:"metrics"`
	}
	if err := json.Unmarshal(lines.Bytes(), &listening); err != nil || listening.Event != "listening" {
		t.Fatalf("first line %q is not the listening event (%v)", lines.Text(), err)
	}
	// Keep reading so that xdswatch never blocks on a full pipe.
	go func() {
		for lines.Scan() {
		}
	}()
	return &xdswatchProcess{Process: p, stdin: stdin, metrics: listening.Metrics}
}

// command writes one --stdin command line.
func (x *xdswatchProcess) command(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(x.stdin, line+"\n"); err != nil {
		t.Fatalf("xdswatch stdin: %v", err)
	}
}

// startPrometheus runs Prometheus on loopback, scraping target (as job
// xdswatchJob) and itself every second and evaluating e2eRules every
// second, with its data in dir.
func startPrometheus(t *testing.T, bin, dir, target string) *promtest.Server {
	t.Helper()
	rules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, dashboards.RulesYAML(dashboards.RecordingRules(), e2eRules()), 0o644); err != nil {
		t.Fatal(err)
	}
	return promtest.Run(t, bin, dir, func(addr string) string {
		return fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - %q
scrape_configs:
  - job_name: %s
    static_configs:
      - targets: [%q]
  - job_name: prometheus
    static_configs:
      - targets: [%q]
`, rules, xdswatchJob, target, addr)
	})
}
