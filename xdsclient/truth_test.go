package xdsclient_test

// What watchers, hooks and the cache say is the cache's real state: errors
// end when their cause ends (gRFC A88), fallback tells no one about failures
// it works around (gRFC A71, as gRPC C-core), channels nothing uses are
// closed, and hooks come in the order of the events.

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// drain returns once every hook call and watcher callback c queued before
// the call has run: hooks added by AddHooks first replay the state, queued
// behind everything queued before. c must have an authority in use.
func drain(t *testing.T, c *xdsclient.Client) {
	t.Helper()
	done := make(chan struct{})
	var once sync.Once
	remove := c.AddHooks(&xdsclient.Hooks{AuthorityServerChanged: func(xdsclient.AuthorityServerInfo) { once.Do(func() { close(done) }) }})
	defer remove()
	select {
	case <-done:
	case <-xdstest.Context(t).Done():
		t.Fatal("the client's callbacks did not drain")
	}
}

// expectCleared takes w's next callback and fails unless it is
// AmbientError(nil).
func expectCleared(t *testing.T, w *xdstest.Watcher) {
	t.Helper()
	if e := w.Next(t); e.Kind != xdsclient.NotifyAmbientError || e.Err != nil {
		t.Fatalf("got %v, want AmbientError(nil): the error is over", e)
	}
}

// After a stream failure the watchers heard as an ambient error, the same
// resource from the server again ends it: AmbientError(nil) once, to the
// watchers that heard it, and a watcher added later hears nothing of it.
func TestAmbientErrorEndsWhenServerReturns(t *testing.T) {
	f := newFixture(t, nil)
	rec, st := f.watchCached("c1")
	st.End(status.Error(codes.Unavailable, "ends after a response"))
	st2 := f.NextStream()
	f.RecvType(st2, cdsURL)
	st2.End(status.Error(codes.Unavailable, "ends with no response"))
	rec.Expect(t, xdsclient.NotifyAmbientError, codes.Unavailable)

	// Joining while the server is unreachable: the resource, then the
	// ambient error in force.
	during := xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.ClusterType, "c1", during)()
	during.Expect(t, xdsclient.NotifyResource, 0)
	during.Expect(t, xdsclient.NotifyAmbientError, codes.Unavailable)

	st3 := f.NextStream()
	f.RecvType(st3, cdsURL)
	f.send(st3, cdsURL, "1", controlplane.Cluster("c1", "c1")) // the same bytes
	expectCleared(t, rec)
	expectCleared(t, during)
	f.RecvType(st3, cdsURL) // ACK
	f.send(st3, cdsURL, "1", controlplane.Cluster("c1", "c1"))
	f.RecvType(st3, cdsURL)

	later := xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.ClusterType, "c1", later)()
	later.Expect(t, xdsclient.NotifyResource, 0)
	drain(t, f.c)
	rec.ExpectNone(t) // no second clear
	during.ExpectNone(t)
	later.ExpectNone(t) // no stale error
	f.checkEntry(cdsURL, "c1", xdsclient.StateACKed, true)
}

// A data error on a cached resource (NACK, TP3 error, ignored deletion) is
// ambient; the resource valid again, unchanged, ends it with
// AmbientError(nil) and the entry is ACKED again without redelivery.
func TestAmbientErrorEndsAfterDataError(t *testing.T) {
	for _, tc := range []struct {
		name string
		code codes.Code
		bad  func(f *fixture) proto.Message // nil: the response carries a TP3 error
		tp3  codes.Code
	}{
		{name: "NACK", code: codes.InvalidArgument, bad: func(*fixture) proto.Message { return xdstest.InvalidCluster("c1") }},
		{name: "TP3 UNAVAILABLE", code: codes.Unavailable, tp3: codes.Unavailable},
		{name: "TP3 NOT_FOUND", code: codes.NotFound, tp3: codes.NotFound},
		{name: "deletion", code: codes.NotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			rec, st := f.watchCached("c1")
			resp := xdstest.Response(cdsURL, "2")
			switch {
			case tc.bad != nil:
				resp = xdstest.Response(cdsURL, "2", tc.bad(f))
			case tc.tp3 != codes.OK:
				resp = xdstest.ErrorResponse(cdsURL, "2", xdstest.ResourceError("c1", tc.tp3, "scripted"))
			}
			f.Send(st, resp)
			rec.Expect(t, xdsclient.NotifyAmbientError, tc.code)
			f.RecvType(st, cdsURL)
			joined := xdstest.NewWatcher()
			defer f.c.Watch(xdsresource.ClusterType, "c1", joined)()
			joined.Expect(t, xdsclient.NotifyResource, 0)
			joined.Expect(t, xdsclient.NotifyAmbientError, tc.code)

			f.send(st, cdsURL, "3", controlplane.Cluster("c1", "c1"))
			expectCleared(t, rec)
			expectCleared(t, joined)
			f.RecvType(st, cdsURL)
			s := f.checkEntry(cdsURL, "c1", xdsclient.StateACKed, true)
			if s.Err != nil || s.Version != "3" {
				t.Errorf("entry after recovery: err %v version %q, want no error and version 3", s.Err, s.Version)
			}
			drain(t, f.c)
			rec.ExpectNone(t)
			joined.ExpectNone(t)
		})
	}
}

// A server that sends the same invalid resource again and again (as
// go-control-plane does after each NACK of a version it still holds): the
// entry keeps its NACK error every time, and the watchers hear of it once.
func TestRepeatedNACKKeepsItsError(t *testing.T) {
	f := newFixture(t, nil)
	rec, st := f.watchCached("c1")
	for i := range 4 {
		f.Send(st, xdstest.Response(cdsURL, "2", xdstest.InvalidCluster("c1")))
		f.RecvType(st, cdsURL) // the NACK
		s := f.checkEntry(cdsURL, "c1", xdsclient.StateNACKed, true)
		if status.Code(s.Err) != codes.InvalidArgument || s.FailedVersion != "2" {
			t.Fatalf("entry after NACK %d: err %v, failed version %q; want its INVALID_ARGUMENT error of version 2", i+1, s.Err, s.FailedVersion)
		}
	}
	rec.Expect(t, xdsclient.NotifyAmbientError, codes.InvalidArgument)
	drain(t, f.c)
	rec.ExpectNone(t)
}

// A watcher of a resource still REQUESTED, added once its server answers
// again, is not told of the server's old failure.
func TestNoStaleErrorForNewWatcherOfRequested(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.Srv.Stop()
	rec := xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.ClusterType, "c1", rec)()
	rec.Expect(t, xdsclient.NotifyResourceError, codes.Unavailable)
	if err := f.Srv.Restart(); err != nil {
		t.Fatal(err)
	}
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	f.send(st, cdsURL, "1", controlplane.Cluster("other", "other")) // an answer, without c1
	f.hooks.responses.waitFor(t, "the response", func(i xdsclient.ResponseInfo) bool { return i.Version == "1" })
	f.checkEntry(cdsURL, "c1", xdsclient.StateRequested, false)
	later := xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.ClusterType, "c1", later)()
	drain(t, f.c)
	later.ExpectNone(t)
}

// A primary that accepts connections but fails every ADS stream before a
// response makes the client fall back; the watchers hear nothing of the
// failure, only the resource the fallback serves (gRPC C-core).
func TestFallbackStreamFailuresNotReported(t *testing.T) {
	m := newMultiFixture(t, 2, nil)
	rec := xdstest.NewWatcher()
	defer m.c.Watch(xdsresource.ClusterType, "c1", rec)()
	pst := m.streamOn(0)
	m.RecvType(pst, cdsURL)
	pst.End(status.Error(codes.Unavailable, "primary fails its streams"))
	fst := m.streamOn(1)
	m.serve(fst, "fallback-1", "c1")
	e := rec.Next(t)
	if e.Kind != xdsclient.NotifyResource || e.Resource.Server != m.srvs[1].Addr() {
		t.Fatalf("first callback %v, want the fallback's resource", e)
	}
	// The primary keeps failing while the fallback serves: still quiet.
	pst2 := m.streamOn(0)
	m.RecvType(pst2, cdsURL)
	pst2.End(status.Error(codes.Unavailable, "primary fails again"))
	m.hooks.ended.waitFor(t, "the second failure", func(i xdsclient.StreamEndInfo) bool {
		return i.Server == m.srvs[0].Addr() && strings.Contains(fmt.Sprint(i.Err), "fails again")
	})
	drain(t, m.c)
	rec.ExpectNone(t)
}

// Fallback is for resources never received: a NACKed or TP3-failed
// resource, cached or not, does not make the client connect to another
// server when the primary goes away; its watchers are told.
func TestNoFallbackForDataErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		send  func(m *multiFixture, st *xdstest.Stream)
		state xdsclient.CacheState
		code  codes.Code
	}{
		{"NACK", func(m *multiFixture, st *xdstest.Stream) {
			m.send(st, cdsURL, "1", xdstest.InvalidCluster("c1"))
		}, xdsclient.StateNACKed, codes.InvalidArgument},
		{"TP3 error", func(m *multiFixture, st *xdstest.Stream) {
			m.Send(st, xdstest.ErrorResponse(cdsURL, "1", xdstest.ResourceError("c1", codes.Unavailable, "scripted")))
		}, xdsclient.StateReceivedError, codes.Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMultiFixture(t, 2, nil)
			rec := xdstest.NewWatcher()
			defer m.c.Watch(xdsresource.ClusterType, "c1", rec)()
			st := m.streamOn(0)
			m.RecvType(st, cdsURL)
			tc.send(m, st)
			rec.Expect(t, xdsclient.NotifyResourceError, tc.code)
			m.RecvType(st, cdsURL)
			m.srvs[0].Stop()
			e := rec.Expect(t, xdsclient.NotifyResourceError, codes.Unavailable)
			checkNames(t, e.Err, "c1", m.srvs[0].Addr())
			for _, i := range m.hooks.authServer.snapshot() {
				if i.Priority > 0 {
					t.Fatalf("fell back (%+v) for a resource the primary answered", i)
				}
			}
			for _, s := range m.hooks.started.snapshot() {
				if s.Server == m.srvs[1].Addr() {
					t.Fatal("a stream to the fallback server was started")
				}
			}
			m.checkEntry(cdsURL, "c1", tc.state, false)
		})
	}
}

// A fallback server whose channel cannot be made (its TLS files are
// missing) is skipped, with a log line naming it; the next one is used.
func TestFallbackSkipsUnusableServer(t *testing.T) {
	ctx := xdstest.Context(t)
	primary, third := xdstest.NewADSServer(t), xdstest.NewADSServer(t)
	js := `{"xds_servers": [
		{"server_uri": "` + primary.Addr() + `", "channel_creds": [{"type": "insecure"}]},
		{"server_uri": "127.0.0.1:1", "channel_creds": [{"type": "tls", "config": {"ca_certificate_file": "` + t.TempDir() + `/missing-ca.pem"}}]},
		{"server_uri": "` + third.Addr() + `", "channel_creds": [{"type": "insecure"}]}
	], "node": ` + testNode + `}`
	cfg, err := bootstrap.Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	logs := &xdstest.SyncBuffer{}
	hooks := newRecordedHooks()
	c := newClient(t, cfg, xdsclient.WithHooks(hooks.hooks()), xdsclient.WithFallback(true), xdsclient.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	primary.Stop()
	rec := xdstest.NewWatcher()
	defer c.Watch(xdsresource.ClusterType, "c1", rec)()
	st := xdstest.Script{T: t, Ctx: ctx, Srv: third}.NextStream()
	xdstest.Script{T: t, Ctx: ctx, Srv: third}.RecvType(st, cdsURL)
	xdstest.Script{T: t, Ctx: ctx, Srv: third}.Send(st, xdstest.Response(cdsURL, "1", controlplane.Cluster("c1", "c1")))
	e := rec.Next(t)
	if e.Kind != xdsclient.NotifyResource || e.Resource.Server != third.Addr() {
		t.Fatalf("first callback %v, want the resource from the third server", e)
	}
	got := hooks.authServer.waitFor(t, "fallback to the third server", func(i xdsclient.AuthorityServerInfo) bool { return i.Priority == 2 })
	if got.Previous != primary.Addr() {
		t.Errorf("fallback %+v, want from the primary", got)
	}
	if out := logs.String(); !strings.Contains(out, "127.0.0.1:1") || !strings.Contains(out, "missing-ca.pem") {
		t.Errorf("log does not name the unusable server and why:\n%s", out)
	}
}

// After switching back to the primary, the fallback server's channel is
// closed and observers see it: its stream ends, it is not connected, and
// ChannelClosed fires; the primary's last watch cancelled closes it too.
func TestUnusedChannelsClose(t *testing.T) {
	t.Parallel()
	m := newMultiFixture(t, 2, nil)
	m.srvs[0].Stop()
	rec := xdstest.NewWatcher()
	cancel := m.c.Watch(xdsresource.ClusterType, "c1", rec)
	fst := m.streamOn(1)
	m.serve(fst, "fallback-1", "c1")
	rec.Expect(t, xdsclient.NotifyResource, 0)
	if err := m.srvs[0].Restart(); err != nil {
		t.Fatal(err)
	}
	pst := m.streamOn(0)
	m.serve(pst, "primary-1", "c1")
	rec.Expect(t, xdsclient.NotifyResource, 0)
	<-fst.Done()
	fb := m.srvs[1].Addr()
	m.hooks.closed.waitFor(t, "the fallback channel closed", func(i xdsclient.ChannelInfo) bool { return i.Server == fb })
	checkClosedAfter(t, m.hooks, fb)

	cancel()
	<-pst.Done()
	m.hooks.closed.waitFor(t, "the primary channel closed", func(i xdsclient.ChannelInfo) bool { return i.Server == m.srvs[0].Addr() })
	checkClosedAfter(t, m.hooks, m.srvs[0].Addr())
	m.hooks.authServer.waitFor(t, "the authority released", func(i xdsclient.AuthorityServerInfo) bool { return i.Server == "" && i.Priority == -1 })
}

// checkClosedAfter asserts the hooks of server end with its stream's end, a
// connected false and ChannelClosed, in that order, and that every stream
// that ended had started.
func checkClosedAfter(t *testing.T, h *recordedHooks, server string) {
	t.Helper()
	var mine []string
	for _, ev := range h.seq.snapshot() {
		if strings.HasSuffix(ev, " "+server) || strings.Contains(ev, " "+server+" ") {
			mine = append(mine, ev)
		}
	}
	n := len(mine)
	if n < 3 || mine[n-1] != "channel-closed "+server || mine[n-2] != "connected "+server+" false" || mine[n-3] != "stream-ended "+server {
		t.Fatalf("last events of %s: %q; want stream-ended, connected false, channel-closed", server, mine)
	}
	checkStreamsPaired(t, h)
}

// checkStreamsPaired asserts that, per server and at every point of the
// sequence, no more streams ended than started.
func checkStreamsPaired(t *testing.T, h *recordedHooks) {
	t.Helper()
	open := map[string]int{}
	for _, ev := range h.seq.snapshot() {
		kind, server, _ := strings.Cut(ev, " ")
		switch kind {
		case "stream-started":
			open[server]++
		case "stream-ended":
			if open[server]--; open[server] < 0 {
				t.Fatalf("a stream to %s ended that never started: %q", server, h.seq.snapshot())
			}
		}
	}
}

// A server that refuses connections makes stream creation fail: that is
// StreamStartFailed, never a StreamEnded without its StreamStarted.
func TestStreamStartFailureIsNotAStreamEnd(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.Srv.Stop()
	rec := xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.ClusterType, "c1", rec)()
	rec.Expect(t, xdsclient.NotifyResourceError, codes.Unavailable)
	f.hooks.startFailed.waitFor(t, "a stream that could not start", func(i xdsclient.StreamEndInfo) bool { return i.Server == f.Srv.Addr() })
	if err := f.Srv.Restart(); err != nil {
		t.Fatal(err)
	}
	st := f.NextStream()
	st.End(status.Error(codes.Unavailable, "a started stream ends"))
	f.hooks.ended.waitFor(t, "the started stream's end", func(xdsclient.StreamEndInfo) bool { return true })
	checkStreamsPaired(t, f.hooks)
	if s, e := len(f.hooks.started.snapshot()), len(f.hooks.ended.snapshot()); e > s {
		t.Fatalf("%d streams ended, %d started", e, s)
	}
}

// The hooks of an update (CacheStateChanged, ResponseReceived) run before
// the WatcherNotified hook and the watcher callback it caused, for every
// update, and hooks run one at a time on the callback goroutine.
func TestHooksPrecedeTheirNotifications(t *testing.T) {
	f := newFixture(t, nil)
	var inCallback atomic.Bool
	var overlap atomic.Int32
	f.c.AddHooks(&xdsclient.Hooks{CacheStateChanged: func(xdsclient.CacheStateInfo) {
		if inCallback.Load() {
			overlap.Add(1)
		}
	}})
	rec := xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.ClusterType, "c1", xdsclient.WatcherFuncs{
		OnResourceChanged: func(r *xdsclient.Resource, err error) {
			inCallback.Store(true)
			rec.ResourceChanged(r, err)
			inCallback.Store(false)
		},
		OnAmbientError: rec.AmbientError,
	})()
	st := f.NextStream()
	const n = 30
	for v := 1; v <= n; v++ {
		f.RecvType(st, cdsURL)
		f.send(st, cdsURL, fmt.Sprint(v), controlplane.Cluster("c1", fmt.Sprint("eds-", v)))
		rec.Expect(t, xdsclient.NotifyResource, 0)
	}
	seq := f.hooks.seq.snapshot()
	// Each notification follows its response's hook; the first, which
	// changes the cache state, follows that change too.
	responses, acked := 0, false
	for _, ev := range seq {
		switch {
		case strings.HasPrefix(ev, "response "):
			responses++
		case ev == "state c1 REQUESTED->ACKED":
			acked = true
		case ev == "notified c1 resource":
			if responses == 0 || !acked {
				t.Fatalf("a notification before the hooks of its update: %q", seq)
			}
			responses--
		}
	}
	if got := len(f.hooks.notified.snapshot()); got != n {
		t.Errorf("%d notifications, want %d", got, n)
	}
	if overlap.Load() != 0 {
		t.Errorf("%d hook calls ran during a watcher callback", overlap.Load())
	}
}
