package xdsclient_test

// Incremental xDS against a scripted delta ADS server: the requests the
// client makes, per-resource versions, removals, reconnection with
// initial_resource_versions and fallback between a delta and a State of
// the World server.

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

var delta = protocols[1]

// newDeltaFixture is a client of one scripted server that it speaks delta
// to, as the bootstrap's delta_xds feature says.
func newDeltaFixture(t *testing.T, opts ...xdsclient.Option) *fixture {
	t.Helper()
	return delta.fixture(t, nil, opts...)
}

// The first request of a stream subscribes, carries the node and no nonce;
// an ACK carries the nonce and nothing else; later subscriptions and
// cancellations name only what changed.
func TestDeltaRequests(t *testing.T) {
	f := newDeltaFixture(t)
	rec1, w, first := delta.watch(f, "c1")
	if !first.node || first.nonce != "" || !slices.Equal(first.names, []string{"c1"}) || len(first.initial) > 0 {
		t.Fatalf("first request %+v, want the node, no nonce, subscribe [c1], no initial versions", first)
	}
	nonce := w.send("1", controlplane.Cluster("c1", "c1"))
	rec1.Expect(t, xdsclient.NotifyResource, 0)
	if ack := w.recv(); ack.nonce != nonce || ack.nack != "" || len(ack.names)+len(ack.unsub) > 0 || ack.node {
		t.Fatalf("ACK %+v, want nonce %q and nothing else", ack, nonce)
	}

	rec2 := xdstest.NewWatcher()
	cancel2 := f.c.Watch(xdsresource.ClusterType, "c2", rec2)
	if r := w.recv(); !slices.Equal(r.names, []string{"c2"}) || r.nonce != "" || len(r.unsub) > 0 {
		t.Fatalf("request %+v, want subscribe [c2] alone, with no nonce", r)
	}
	cancel2()
	if r := w.recv(); !slices.Equal(r.unsub, []string{"c2"}) || len(r.names) > 0 {
		t.Fatalf("request %+v, want unsubscribe [c2] alone", r)
	}
	reqs := f.hooks.requests.waitFor(t, "the unsubscription's hook", func(i xdsclient.RequestInfo) bool { return i.Unsubscribed == 1 })
	if !reqs.Delta || reqs.Names != 0 || reqs.Version != "" {
		t.Errorf("RequestSent %+v, want a delta request unsubscribing one name", reqs)
	}
	if s := f.hooks.started.waitFor(t, "stream start", func(xdsclient.StreamInfo) bool { return true }); !s.Delta {
		t.Errorf("StreamStarted %+v, want Delta", s)
	}
}

// A name cancelled and watched again at once is unsubscribed and then
// subscribed, never both in one request (the server would apply the
// unsubscription last and not send the resource again).
func TestDeltaResubscribe(t *testing.T) {
	f := newDeltaFixture(t)
	_, w := delta.cached(f, "c1")
	rec2 := xdstest.NewWatcher()
	cancel2 := f.c.Watch(xdsresource.ClusterType, "c2", rec2)
	w.recv() // subscribe c2
	for i := 0; i < 3; i++ {
		cancel2()
		rec2 = xdstest.NewWatcher()
		cancel2 = f.c.Watch(xdsresource.ClusterType, "c2", rec2)
	}
	defer cancel2()
	subscribed := true
	for {
		r := w.recv()
		if slices.Contains(r.names, "c2") && slices.Contains(r.unsub, "c2") {
			t.Fatalf("request %+v both subscribes and unsubscribes c2", r)
		}
		if slices.Contains(r.unsub, "c2") {
			subscribed = false
		}
		if slices.Contains(r.names, "c2") {
			if subscribed {
				t.Fatalf("request %+v subscribes c2 again without unsubscribing it first", r)
			}
			break
		}
	}
	w.send("2", controlplane.Cluster("c2", "c2"))
	rec2.Expect(t, xdsclient.NotifyResource, 0)
}

// Each resource has its own version, which the cache, CSDS and watchers
// show; a response carries only what changed, and only its watchers hear.
func TestDeltaPerResourceVersions(t *testing.T) {
	f := newDeltaFixture(t)
	rec1, w, _ := delta.watch(f, "c1")
	rec2 := xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.ClusterType, "c2", rec2)()
	w.recv()
	f.SendDelta(w.(deltaWire).st, xdstest.DeltaResponse(cdsURL, "system-1",
		xdstest.DeltaResource("c1", "c1-v1", controlplane.Cluster("c1", "c1")),
		xdstest.DeltaResource("c2", "c2-v7", controlplane.Cluster("c2", "c2"))))
	if v := rec1.Expect(t, xdsclient.NotifyResource, 0).Resource.Version; v != "c1-v1" {
		t.Errorf("c1 delivered at version %q, want its own c1-v1", v)
	}
	rec2.Expect(t, xdsclient.NotifyResource, 0)
	w.recv()
	f.SendDelta(w.(deltaWire).st, xdstest.DeltaResponse(cdsURL, "system-2",
		xdstest.DeltaResource("c2", "c2-v8", controlplane.Cluster("c2", "c2-changed"))))
	if v := rec2.Expect(t, xdsclient.NotifyResource, 0).Resource.Version; v != "c2-v8" {
		t.Errorf("c2 delivered at version %q, want c2-v8", v)
	}
	w.recv()
	drain(t, f.c)
	rec1.ExpectNone(t)
	if s := f.entry(cdsURL, "c1"); s.Version != "c1-v1" {
		t.Errorf("c1 cached at version %q, want c1-v1", s.Version)
	}
	if s := f.entry(cdsURL, "c2"); s.Version != "c2-v8" {
		t.Errorf("c2 cached at version %q, want c2-v8", s.Version)
	}
	resp := f.hooks.responses.waitFor(t, "the second response's hook", func(i xdsclient.ResponseInfo) bool { return i.Version == "system-2" })
	if !resp.Delta || resp.Valid != 1 {
		t.Errorf("ResponseReceived %+v, want a delta response with one valid resource", resp)
	}
}

// A removal of a subscribed name never received means it does not exist,
// at once; removals of names not subscribed are ignored; a name both sent
// and removed is NACKed; a removal of a type that is not a full-state type
// in SotW (EDS) is a deletion too; heartbeats change nothing.
func TestDeltaRemovals(t *testing.T) {
	f := newDeltaFixture(t, xdsclient.WithResourceTimeout(time.Hour))
	rec, w, _ := delta.watch(f, "c1")
	f.hooks.timerStarts.waitFor(t, "timer start", func(xdsclient.ResourceTimerInfo) bool { return true })
	nonce := f.SendDelta(w.(deltaWire).st, xdstest.DeltaRemoval(cdsURL, "1", "c1", "not-subscribed")).GetNonce()
	e := rec.Expect(t, xdsclient.NotifyResourceError, codes.NotFound)
	checkNames(t, e.Err, "c1", f.Srv.Addr())
	f.checkEntry(cdsURL, "c1", xdsclient.StateDoesNotExist, false)
	f.hooks.timerStops.waitFor(t, "timer stop", func(xdsclient.ResourceTimerInfo) bool { return true })
	if ack := w.recv(); ack.nonce != nonce || ack.nack != "" {
		t.Errorf("removal answered with %+v, want an ACK of %q", ack, nonce)
	}
	if r := f.hooks.responses.waitFor(t, "response hook", func(i xdsclient.ResponseInfo) bool { return i.Version == "1" }); r.Removed != 1 || r.Valid+r.Invalid != 0 {
		t.Errorf("ResponseReceived %+v, want one removal and nothing counted valid or invalid", r)
	}

	// Sent and removed in one response: NACKed, the resource applied.
	resp := xdstest.DeltaResponse(cdsURL, "2", xdstest.DeltaResource("c1", "1", controlplane.Cluster("c1", "c1")))
	resp.RemovedResources = []string{"c1"}
	f.SendDelta(w.(deltaWire).st, resp)
	rec.Expect(t, xdsclient.NotifyResource, 0)
	if nack := w.recv(); !contains(errString(nack.nack), "removed_resources") {
		t.Errorf("request %+v, want a NACK about removed_resources", nack)
	}

	// A heartbeat changes nothing and is not NACKed.
	nonce = f.SendDelta(w.(deltaWire).st, xdstest.DeltaResponse(cdsURL, "3", xdstest.DeltaResource("c1", "1", nil))).GetNonce()
	if ack := w.recv(); ack.nack != "" || ack.nonce != nonce {
		t.Errorf("heartbeat answered with %+v, want an ACK", ack)
	}
	drain(t, f.c)
	rec.ExpectNone(t)

	// EDS: removal is a deletion, ambient while cached.
	eds := xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.EndpointsType, "e1", eds)()
	edsURL := xdsresource.EndpointsType.TypeURL()
	f.RecvDelta(w.(deltaWire).st, edsURL)
	f.SendDelta(w.(deltaWire).st, xdstest.DeltaResponse(edsURL, "1", xdstest.DeltaResource("e1", "1", controlplane.Endpoints("e1", "127.0.0.1:1"))))
	eds.Expect(t, xdsclient.NotifyResource, 0)
	f.RecvDelta(w.(deltaWire).st, edsURL)
	f.SendDelta(w.(deltaWire).st, xdstest.DeltaRemoval(edsURL, "2", "e1"))
	eds.Expect(t, xdsclient.NotifyAmbientError, codes.NotFound)
	f.checkEntry(edsURL, "e1", xdsclient.StateDoesNotExist, true)
}

// A new stream after one that had responses subscribes everything again
// with the versions held, and nobody hears of it; after a server failure
// it asks for everything, so that the server's answer ends the errors.
func TestDeltaReconnect(t *testing.T) {
	f := newDeltaFixture(t)
	rec, w, _ := delta.watch(f, "c1")
	f.SendDelta(w.(deltaWire).st, xdstest.DeltaResponse(cdsURL, "s1", xdstest.DeltaResource("c1", "c1-v1", controlplane.Cluster("c1", "c1"))))
	rec.Expect(t, xdsclient.NotifyResource, 0)
	w.recv()
	w.end(errUnavailable("stream killed after a response"))

	w2 := delta.next(f)
	r := w2.recv()
	if !slices.Equal(r.names, []string{"c1"}) || r.initial["c1"] != "c1-v1" || len(r.initial) != 1 || !r.node {
		t.Fatalf("first request after a reconnection %+v, want subscribe [c1] with initial version c1-v1 and the node", r)
	}
	drain(t, f.c)
	rec.ExpectNone(t)

	// The server had nothing new to send: the end of that stream without a
	// response is no server failure, and the next stream asks for
	// everything.
	w2.end(errUnavailable("stream ended with nothing sent"))
	w3 := delta.next(f)
	if r := w3.recv(); len(r.initial) != 0 || !slices.Equal(r.names, []string{"c1"}) {
		t.Fatalf("first request after a resumed stream ended quietly %+v, want subscribe [c1] with no initial versions", r)
	}
	drain(t, f.c)
	rec.ExpectNone(t)
	if n := len(f.hooks.failures.snapshot()); n != 0 {
		t.Fatalf("%d server failures after a resumed stream ended quietly, want 0", n)
	}

	// A stream that asked for everything and got nothing is a failure.
	w3.end(errUnavailable("stream killed before a response"))
	rec.Expect(t, xdsclient.NotifyAmbientError, codes.Unavailable)
	w4 := delta.next(f)
	if r := w4.recv(); len(r.initial) != 0 || !slices.Equal(r.names, []string{"c1"}) {
		t.Fatalf("first request after a server failure %+v, want subscribe [c1] with no initial versions", r)
	}
	w4.send("c1-v1", controlplane.Cluster("c1", "c1"))
	expectCleared(t, rec)
}

// Fallback (gRFC A71) between a delta server and a State of the World
// server, both ways.
func TestDeltaFallback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		primary, backup protocol
	}{
		{"delta primary, sotw fallback", protocols[1], protocols[0]},
		{"sotw primary, delta fallback", protocols[0], protocols[1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := xdstest.Context(t)
			p, b := xdstest.NewADSServer(t), xdstest.NewADSServer(t)
			servers := `[` + xdstest.ServerJSON(p.Addr(), tc.primary.features...) + `, ` + xdstest.ServerJSON(b.Addr(), tc.backup.features...) + `]`
			cfg, err := bootstrap.Parse([]byte(`{"xds_servers": ` + servers + `, "node": ` + testNode + `}`))
			if err != nil {
				t.Fatal(err)
			}
			hooks := newRecordedHooks()
			f := &fixture{Script: xdstest.Script{T: t, Ctx: ctx, Srv: p}, hooks: hooks}
			f.c = newClient(t, cfg, xdsclient.WithHooks(hooks.hooks()), xdsclient.WithFallback(true))
			fb := &fixture{Script: xdstest.Script{T: t, Ctx: ctx, Srv: b}, c: f.c, hooks: hooks}

			p.Stop()
			rec := xdstest.NewWatcher()
			defer f.c.Watch(xdsresource.ClusterType, "c1", rec)()
			bw := tc.backup.next(fb)
			bw.recv()
			bw.send("fallback-1", controlplane.Cluster("c1", "from-fallback"))
			for {
				e := rec.Next(t)
				if e.Kind == xdsclient.NotifyResource {
					if e.Resource.Server != b.Addr() {
						t.Fatalf("resource from %q, want the fallback %q", e.Resource.Server, b.Addr())
					}
					break
				}
			}
			if err := p.Restart(); err != nil {
				t.Fatal(err)
			}
			pw := tc.primary.next(f)
			pw.recv()
			pw.send("primary-1", controlplane.Cluster("c1", "from-primary"))
			e := rec.Expect(t, xdsclient.NotifyResource, 0)
			if e.Resource.Server != p.Addr() || e.Resource.Version != "primary-1" {
				t.Fatalf("after switching back got %q from %q, want primary-1 from the primary", e.Resource.Version, e.Resource.Server)
			}
			select {
			case <-bw.done():
			case <-ctx.Done():
				t.Fatal("the fallback stream was not closed after switching back")
			}
			hooks.authServer.waitFor(t, "switch back", func(i xdsclient.AuthorityServerInfo) bool { return i.Priority == 0 && i.Previous == b.Addr() })
		})
	}
}
