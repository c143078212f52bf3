package xdsclient_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/lrsserver"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/lrs"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// loadHooks records the load reporting hooks of a client.
type loadHooks struct {
	mu      sync.Mutex
	started []xdsclient.LoadReportStreamInfo
	ended   []xdsclient.LoadReportStreamEndInfo
	sent    []xdsclient.LoadReportInfo
}

func (r *loadHooks) hooks() *xdsclient.Hooks {
	return &xdsclient.Hooks{
		LoadReportStreamStarted: func(i xdsclient.LoadReportStreamInfo) {
			r.mu.Lock()
			r.started = append(r.started, i)
			r.mu.Unlock()
			xdstest.Notify()
		},
		LoadReportStreamEnded: func(i xdsclient.LoadReportStreamEndInfo) {
			r.mu.Lock()
			r.ended = append(r.ended, i)
			r.mu.Unlock()
			xdstest.Notify()
		},
		LoadReportSent: func(i xdsclient.LoadReportInfo) {
			r.mu.Lock()
			r.sent = append(r.sent, i)
			r.mu.Unlock()
			xdstest.Notify()
		},
	}
}

func (r *loadHooks) counts() (started, ended, sent int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.started), len(r.ended), len(r.sent)
}

// A cluster with lrs_server self, watched from a control plane that also
// serves LRS: its load goes to that server, on one stream shared by every
// user, until the last one releases it.
func TestReportLoadToTheClusterServer(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := xdstest.Context(t)
	svc := lrsserver.NewService(lrsserver.Config{Interval: 20 * time.Millisecond, SendAll: true})
	cp, err := controlplane.Start(ctx, "127.0.0.1:0", controlplane.WithService(svc.Register))
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	cl := controlplane.ClusterWithLoadReporting("c1", "eds-1")
	if err := cp.SetResources(ctx, testNodeID, "1", cl); err != nil {
		t.Fatal(err)
	}
	rec := &loadHooks{}
	c, err := xdsclient.New(bootstrapFor(t, cp.Addr()), xdstest.ClientOptions(xdsclient.WithHooks(rec.hooks()), xdsclient.WithTarget("t1"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := xdstest.NewWatcher()
	defer c.Watch(xdsresource.ClusterType, "c1", w)()
	res := w.Expect(t, xdsclient.NotifyResource, 0).Resource
	cluster := res.Value.(*xdsresource.Cluster)
	if !cluster.LRSServer {
		t.Fatalf("cluster %v: LRSServer not set", cluster)
	}

	load, release1, err := c.ReportLoad(res.Server, cluster.Name, cluster.EDSServiceName)
	if err != nil {
		t.Fatal(err)
	}
	load2, release2, err := c.ReportLoad(res.Server, cluster.Name, cluster.EDSServiceName)
	if err != nil {
		t.Fatal(err)
	}
	if load != load2 {
		t.Error("two users of one cluster got different ClusterLoads")
	}
	loc := lrs.Locality{Region: "r", Zone: "z"}
	load.CallStarted(loc)
	load.CallFinished(loc, nil)
	load2.CallStarted(loc)
	load2.CallFinished(loc, errors.New("x"))
	var reports []lrsserver.Report
	if err := svc.Wait(ctx, func() bool {
		reports = svc.Reports()
		for _, r := range reports {
			for _, cs := range r.Stats {
				if cs.GetClusterName() == "c1" && cs.GetClusterServiceName() == "eds-1" {
					return true
				}
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	release1()
	release1() // twice is fine
	if n := svc.Open(); n != 1 {
		t.Errorf("%d LRS streams open with one user left, want 1", n)
	}
	release2()
	if err := svc.Wait(ctx, func() bool { return svc.Open() == 0 }); err != nil {
		t.Fatalf("the stream outlived its last user: %v", err)
	}
	xdstest.WaitFor(t, ctx, "the stream end hook", func() bool { _, ended, _ := rec.counts(); return ended == 1 })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.started) != 1 || rec.started[0].Server != cp.Addr() || rec.started[0].Target != "t1" || rec.started[0].Attempt != 1 {
		t.Errorf("stream start hooks = %+v, want one for %s", rec.started, cp.Addr())
	}
	if e := rec.ended[0]; !e.Created || !e.ResponseReceived || !errors.Is(e.Err, lrs.ErrStopped) {
		t.Errorf("stream end hook = %+v, want a stream stopped after a response", e)
	}
	var issued, succeeded, errored uint64
	for _, s := range rec.sent {
		issued, succeeded, errored = issued+s.Issued, succeeded+s.Succeeded, errored+s.Errored
	}
	if issued != 2 || succeeded != 1 || errored != 1 || !rec.sent[len(rec.sent)-1].Final {
		t.Errorf("report hooks = %+v, want 2 calls (1 ok, 1 error) in all, the last report final", rec.sent)
	}
	if nodes := svc.Nodes(); len(nodes) != 1 || nodes[0].GetId() != testNodeID {
		t.Errorf("LRS nodes = %v, want one with id %q", nodes, testNodeID)
	}
}

func TestReportLoadErrors(t *testing.T) {
	c := xdstest.NewClient(t, bootstrapFor(t, "127.0.0.1:1"), xdstest.ClientOptions()...)
	if _, _, err := c.ReportLoad("elsewhere:443", "c", ""); err == nil || !strings.Contains(err.Error(), `"elsewhere:443"`) {
		t.Errorf("ReportLoad to a server not in the bootstrap: %v, want an error naming it", err)
	}
	for _, bad := range [][2]string{{"c\xff", ""}, {"c", strings.Repeat("s", xdsclient.MaxResourceNameSize+1)}} {
		if _, _, err := c.ReportLoad("127.0.0.1:1", bad[0], bad[1]); err == nil || !strings.Contains(err.Error(), "load report of") {
			t.Errorf("ReportLoad of cluster %.20q, service %.20q: %v, want an error naming the bad name", bad[0], bad[1], err)
		}
	}
	// The server is not up: the stream is retried until Close, which
	// stops it.
	_, release, err := c.ReportLoad("127.0.0.1:1", "c", "")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	release() // after Close is fine
	if _, _, err := c.ReportLoad("127.0.0.1:1", "c", ""); !errors.Is(err, xdsclient.ErrClosed) {
		t.Errorf("ReportLoad after Close: %v, want ErrClosed", err)
	}
}

// Close ends the LRS streams with a final report, and leaves no goroutine.
func TestCloseStopsLoadReports(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	svc := lrsserver.NewService(lrsserver.Config{Interval: time.Hour, SendAll: true})
	srv, err := lrsserver.Listen(ctx, "127.0.0.1:0", svc)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	rec := &loadHooks{}
	c, err := xdsclient.New(bootstrapFor(t, srv.Addr()), xdstest.ClientOptions(xdsclient.WithHooks(rec.hooks()))...)
	if err != nil {
		t.Fatal(err)
	}
	load, _, err := c.ReportLoad(srv.Addr(), "c", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Wait(ctx, func() bool { return svc.Open() == 1 }); err != nil {
		t.Fatal(err)
	}
	load.CallDropped("overload")
	c.Close()
	if err := svc.Wait(ctx, func() bool { return svc.Open() == 0 }); err != nil {
		t.Fatalf("stream open after Close: %v", err)
	}
	started, ended, _ := rec.counts()
	if started != 1 || ended != 1 {
		t.Errorf("after Close: %d stream starts, %d ends; want 1 and 1 (hooks queued before Close have run)", started, ended)
	}
}

// notifyingWriter wakes xdstest.Until at each write.
type notifyingWriter struct{ w *xdstest.SyncBuffer }

func (n notifyingWriter) Write(p []byte) (int, error) {
	defer xdstest.Notify()
	return n.w.Write(p)
}

// logLines returns the lines of logs with message msg, as slog's text
// handler writes them, at level, for server.
func logLines(logs, level, msg, server string) int {
	n := 0
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "level="+level+" ") && strings.Contains(l, `msg="`+msg) && strings.Contains(l, "server="+server) {
			n++
		}
	}
	return n
}

// A load report stream that fails is logged as the ADS streams are: a
// warning at its first failure, and again when the cause changes; its
// retries at debug; the first response after failures at info; an end
// by release not at all.
func TestLoadReportFailuresLogged(t *testing.T) {
	t.Parallel()
	ctx := xdstest.Context(t)
	noLRS := xdstest.NewADSServer(t) // answers LRS with UNIMPLEMENTED
	svc := lrsserver.NewService(lrsserver.Config{Interval: 10 * time.Millisecond, SendAll: true})
	lrsSrv, err := lrsserver.Listen(ctx, "127.0.0.1:0", svc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lrsSrv.Stop)
	var logs xdstest.SyncBuffer
	rec := &loadHooks{}
	cfg := xdstest.Bootstrap{Servers: []string{noLRS.Addr(), lrsSrv.Addr()}, Node: testNode}.Parse(t)
	c := newClient(t, cfg, xdsclient.WithHooks(rec.hooks()),
		xdsclient.WithLogger(slog.New(slog.NewTextHandler(notifyingWriter{&logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	const failed = "LRS stream failed before any response"
	until := func(what string, cond func() bool) {
		t.Helper()
		if !xdstest.Until(ctx, cond) {
			t.Fatalf("%s; logs:\n%s", what, logs.String())
		}
	}

	// UNIMPLEMENTED again and again: one warning, the retries at debug.
	_, release, err := c.ReportLoad(noLRS.Addr(), "c1", "")
	if err != nil {
		t.Fatal(err)
	}
	until("no three failures at debug after a warning", func() bool {
		return logLines(logs.String(), "DEBUG", failed, noLRS.Addr()) >= 3
	})
	if n := logLines(logs.String(), "WARN", failed, noLRS.Addr()); n != 1 {
		t.Errorf("%d warnings of a failing LRS stream, want 1; logs:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "code = Unimplemented") {
		t.Errorf("the failure's cause is not logged:\n%s", logs.String())
	}
	// Another cause: the server goes away, UNAVAILABLE.
	noLRS.Stop()
	until("no second warning for a new cause", func() bool {
		return logLines(logs.String(), "WARN", failed, noLRS.Addr()) == 2
	})
	release()

	// A server that answers, goes away and comes back.
	_, release, err = c.ReportLoad(lrsSrv.Addr(), "c1", "")
	if err != nil {
		t.Fatal(err)
	}
	until("no report sent", func() bool { _, _, sent := rec.counts(); return sent > 0 })
	lrsSrv.Stop()
	until("no warning after the server stopped", func() bool {
		return logLines(logs.String(), "WARN", failed, lrsSrv.Addr()) == 1
	})
	if err := lrsSrv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	until("no info line when the server answers again", func() bool {
		return logLines(logs.String(), "INFO", "LRS stream answered again", lrsSrv.Addr()) == 1
	})
	before := logs.String()
	_, ended, _ := rec.counts()
	release() // returns once the stream has ended
	if _, e, _ := rec.counts(); e <= ended {
		t.Error("the released stream did not end")
	}
	if after := logs.String(); after != before {
		t.Errorf("release logged %q", strings.TrimPrefix(after, before))
	}
}
