package xdsclient_test

// gRFC A71 fallback and gRFC A47 federation, with several scripted ADS
// servers on loopback that are stopped and restarted on the same port.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// multiFixture is a client over several scripted servers.
type multiFixture struct {
	*fixture
	srvs []*xdstest.ADSServer
}

// newMultiFixture makes n servers, all top-level in priority order, and
// extra authorities given as JSON (may be "").
func newMultiFixture(t *testing.T, n int, authorities func(addrs []string) string, opts ...xdsclient.Option) *multiFixture {
	t.Helper()
	m := &multiFixture{fixture: &fixture{Script: xdstest.Script{T: t, Ctx: xdstest.Context(t)}, hooks: newRecordedHooks()}}
	var addrs []string
	for i := 0; i < n; i++ {
		s := xdstest.NewADSServer(t)
		m.srvs = append(m.srvs, s)
		addrs = append(addrs, s.Addr())
	}
	b := xdstest.Bootstrap{Servers: addrs, Node: testNode}
	if authorities != nil {
		b.Authorities = authorities(addrs)
	}
	m.Srv = m.srvs[0]
	m.c = newClient(t, b.Parse(t), append([]xdsclient.Option{xdsclient.WithHooks(m.hooks.hooks()), xdsclient.WithFallback(true)}, opts...)...)
	return m
}

// streamOn waits for the client's next ADS stream on server i.
func (m *multiFixture) streamOn(i int) *xdstest.Stream {
	m.T.Helper()
	return xdstest.Script{T: m.T, Ctx: m.Ctx, Srv: m.srvs[i]}.NextStream()
}

// serve answers the next CDS request on st with clusters at version v.
func (m *multiFixture) serve(st *xdstest.Stream, v string, names ...string) {
	m.T.Helper()
	m.RecvType(st, cdsURL)
	var res []any
	for _, n := range names {
		res = append(res, controlplane.Cluster(n, "from-"+v))
	}
	m.send(st, cdsURL, v, toMessages(res)...)
}

func (m *multiFixture) activeServer(authority string) xdsclient.AuthorityServerInfo {
	var last xdsclient.AuthorityServerInfo
	for _, i := range m.hooks.authServer.snapshot() {
		if i.Authority == authority {
			last = i
		}
	}
	return last
}

func TestFallbackPrimaryDownAtStart(t *testing.T) {
	t.Parallel()
	m := newMultiFixture(t, 2, nil)
	m.srvs[0].Stop()
	rec := xdstest.NewWatcher()
	defer m.c.Watch(xdsresource.ClusterType, "c1", rec)()
	st := m.streamOn(1)
	m.serve(st, "fallback-1", "c1")
	for {
		e := rec.Next(t)
		if e.Kind == xdsclient.NotifyResource {
			if got := e.Resource.Server; got != m.srvs[1].Addr() {
				t.Fatalf("resource from %q, want the fallback %q", got, m.srvs[1].Addr())
			}
			break
		}
		if status := e.Err; status != nil && !contains(status, m.srvs[0].Addr()) {
			t.Errorf("error %v does not name the servers tried", status)
		}
	}
	fb := m.hooks.authServer.waitFor(t, "fallback", func(i xdsclient.AuthorityServerInfo) bool { return i.Priority == 1 })
	if fb.Previous != m.srvs[0].Addr() || fb.Server != m.srvs[1].Addr() || !strings.Contains(fb.Reason, "fallback") {
		t.Errorf("fallback hook %+v", fb)
	}

	// The primary comes back: the client switches to it, closes the
	// fallback stream, and the primary's resource replaces the fallback's.
	if err := m.srvs[0].Restart(); err != nil {
		t.Fatal(err)
	}
	pst := m.streamOn(0)
	m.serve(pst, "primary-1", "c1")
	e := rec.Expect(t, xdsclient.NotifyResource, 0)
	if e.Resource.Server != m.srvs[0].Addr() || e.Resource.Version != "primary-1" {
		t.Fatalf("after switch back got %s from %s, want primary-1 from the primary", e.Resource.Version, e.Resource.Server)
	}
	select {
	case <-st.Done():
	case <-m.Ctx.Done():
		t.Fatal("the fallback stream was not closed after the switch back")
	}
	m.hooks.authServer.waitFor(t, "switch back", func(i xdsclient.AuthorityServerInfo) bool { return i.Priority == 0 && i.Previous == m.srvs[1].Addr() })
	rec.ExpectNone(t)
}

func TestFallbackNotWhenEverythingCached(t *testing.T) {
	m := newMultiFixture(t, 2, nil)
	rec := xdstest.NewWatcher()
	defer m.c.Watch(xdsresource.ClusterType, "c1", rec)()
	st := m.streamOn(0)
	m.serve(st, "1", "c1")
	rec.Expect(t, xdsclient.NotifyResource, 0)
	m.srvs[0].Stop()
	rec.Expect(t, xdsclient.NotifyAmbientError, codes.Unavailable)
	m.hooks.failures.waitFor(t, "failure", func(xdsclient.ServerFailureInfo) bool { return true })
	for _, s := range m.hooks.started.snapshot() {
		if s.Server == m.srvs[1].Addr() {
			t.Fatal("a stream to the fallback server was started although everything was cached")
		}
	}
	if got := m.activeServer("#old"); got.Priority != 0 {
		t.Fatalf("authority moved to %+v", got)
	}
	// A resource already cached is never dropped by a timer meanwhile.
	m.checkEntry(cdsURL, "c1", xdsclient.StateACKed, true)
}

// A new watch for a resource that is not cached while the primary is down
// triggers fallback; resources cached from the primary keep being used and
// no timer drops them on the fallback server.
func TestFallbackOnNewWatchWhilePrimaryDown(t *testing.T) {
	m := newMultiFixture(t, 2, nil, xdsclient.WithResourceTimeout(50*time.Millisecond))
	r1 := xdstest.NewWatcher()
	defer m.c.Watch(xdsresource.ClusterType, "c1", r1)()
	st := m.streamOn(0)
	m.serve(st, "1", "c1")
	r1.Expect(t, xdsclient.NotifyResource, 0)
	m.srvs[0].Stop()
	r1.Expect(t, xdsclient.NotifyAmbientError, codes.Unavailable)
	m.hooks.failures.waitFor(t, "failure", func(xdsclient.ServerFailureInfo) bool { return true })

	r2 := xdstest.NewWatcher()
	defer m.c.Watch(xdsresource.ClusterType, "c2", r2)()
	fst := m.streamOn(1)
	req := m.RecvType(fst, cdsURL)
	if got := names(req); len(got) != 2 {
		t.Fatalf("fallback subscription %v, want every watched resource", got)
	}
	// The fallback server has c2 only; c1 stays as the primary sent it.
	m.send(fst, cdsURL, "fb-1", controlplane.Cluster("c2", "fb"))
	r2.Expect(t, xdsclient.NotifyResource, 0)
	m.checkEntry(cdsURL, "c1", xdsclient.StateDoesNotExist, true)
	// c1's deletion by the fallback's full state is ambient under A88; the
	// resource stays in use.
	for {
		e := r1.Next(t)
		if e.Kind != xdsclient.NotifyAmbientError {
			t.Fatalf("c1 got %v, want only ambient errors", e)
		}
		if status.Code(e.Err) == codes.NotFound {
			break
		}
	}
	for _, ti := range m.hooks.timerStarts.snapshot() {
		if ti.Name == "c1" && ti.Server == m.srvs[1].Addr() {
			t.Errorf("a does-not-exist timer ran for the cached c1 on %s", ti.Server)
		}
	}
}

// A failed retry of the primary while the fallback serves sends no error to
// watchers whose resources the fallback serves.
func TestFallbackPrimaryRetryFailuresAreQuiet(t *testing.T) {
	m := newMultiFixture(t, 2, nil, xdsclient.WithBackoff(func(int) time.Duration { return time.Millisecond }))
	rec := xdstest.NewWatcher()
	defer m.c.Watch(xdsresource.ClusterType, "c1", rec)()
	pst := m.streamOn(0)
	m.RecvType(pst, cdsURL)
	pst.End(errUnavailable("primary broken"))
	fst := m.streamOn(1)
	m.serve(fst, "fb-1", "c1")
	for {
		if e := rec.Next(t); e.Kind == xdsclient.NotifyResource {
			break
		}
	}
	// The primary keeps failing; each retry must stay between the client
	// and the primary.
	for i := 0; i < 3; i++ {
		st := m.streamOn(0)
		m.RecvType(st, cdsURL)
		st.End(errUnavailable("still broken"))
	}
	m.hooks.ended.waitFor(t, "third retry failed", func(xdsclient.StreamEndInfo) bool {
		n := 0
		for _, e := range m.hooks.ended.snapshot() {
			if e.Server == m.srvs[0].Addr() {
				n++
			}
		}
		return n >= 4
	})
	// Deliver something through the fallback to flush the callback queue.
	m.RecvType(fst, cdsURL)
	m.send(fst, cdsURL, "fb-2", controlplane.Cluster("c1", "fb-2"))
	e := rec.Next(t)
	if e.Kind != xdsclient.NotifyResource {
		t.Fatalf("watcher served by the fallback got %v from the primary's failed retries", e)
	}
}

func TestFallbackThreeServers(t *testing.T) {
	t.Parallel()
	m := newMultiFixture(t, 3, nil)
	m.srvs[0].Stop()
	m.srvs[1].Stop()
	rec := xdstest.NewWatcher()
	defer m.c.Watch(xdsresource.ClusterType, "c1", rec)()
	st2 := m.streamOn(2)
	m.serve(st2, "third", "c1")
	for {
		if e := rec.Next(t); e.Kind == xdsclient.NotifyResource {
			if e.Resource.Server != m.srvs[2].Addr() {
				t.Fatalf("resource from %s, want the third server", e.Resource.Server)
			}
			break
		}
	}
	// The second server recovers first: promotion to it.
	if err := m.srvs[1].Restart(); err != nil {
		t.Fatal(err)
	}
	st1 := m.streamOn(1)
	m.serve(st1, "second", "c1")
	if e := rec.Expect(t, xdsclient.NotifyResource, 0); e.Resource.Version != "second" {
		t.Fatalf("got %s, want the second server's", e.Resource.Version)
	}
	<-st2.Done()
	// Then the primary.
	if err := m.srvs[0].Restart(); err != nil {
		t.Fatal(err)
	}
	st0 := m.streamOn(0)
	m.serve(st0, "primary", "c1")
	if e := rec.Expect(t, xdsclient.NotifyResource, 0); e.Resource.Version != "primary" {
		t.Fatalf("got %s, want the primary's", e.Resource.Version)
	}
	<-st1.Done()
}

func TestFallbackDisabled(t *testing.T) {
	m := newMultiFixture(t, 2, nil, xdsclient.WithFallback(false))
	m.srvs[0].Stop()
	rec := xdstest.NewWatcher()
	defer m.c.Watch(xdsresource.ClusterType, "c1", rec)()
	rec.Expect(t, xdsclient.NotifyResourceError, codes.Unavailable)
	rec.Expect(t, xdsclient.NotifyResourceError, codes.Unavailable)
	for _, s := range m.hooks.started.snapshot() {
		if s.Server == m.srvs[1].Addr() {
			t.Fatal("fallback used although disabled")
		}
	}
}

func TestFallbackEnvironmentVariable(t *testing.T) {
	t.Setenv(xdsclient.EnvFallback, "false")
	srvA, srvB := xdstest.NewADSServer(t), xdstest.NewADSServer(t)
	srvA.Stop()
	cfg := xdstest.Bootstrap{Servers: []string{srvA.Addr(), srvB.Addr()}}.Parse(t)
	h := newRecordedHooks()
	c, err := xdsclient.New(cfg, xdsclient.WithHooks(h.hooks()), xdsclient.WithBackoff(func(int) time.Duration { return time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rec := xdstest.NewWatcher()
	defer c.Watch(xdsresource.ClusterType, "c1", rec)()
	rec.Expect(t, xdsclient.NotifyResourceError, codes.Unavailable)
	rec.Expect(t, xdsclient.NotifyResourceError, codes.Unavailable)
	for _, s := range h.started.snapshot() {
		if s.Server == srvB.Addr() {
			t.Fatal("fallback used with GRPC_EXPERIMENTAL_XDS_FALLBACK=false")
		}
	}
}

// Two authorities with their own server lists fall back independently, and
// a server shared by both is one connection; late updates from a server
// that stays open for another authority are ignored.
func TestFallbackPerAuthority(t *testing.T) {
	t.Parallel()
	// Servers: 0 primary of A; 1 fallback of A and primary of B.
	m := newMultiFixture(t, 2, func(addrs []string) string {
		return fmt.Sprintf(`{"a": {"xds_servers": %s}, "b": {"xds_servers": %s}}`, xdstest.ServersJSON(addrs[0], addrs[1]), xdstest.ServersJSON(addrs[1]))
	})
	nameA := "xdstp://a/envoy.config.cluster.v3.Cluster/ca"
	nameB := "xdstp://b/envoy.config.cluster.v3.Cluster/cb"
	recB := xdstest.NewWatcher()
	defer m.c.Watch(xdsresource.ClusterType, nameB, recB)()
	st1 := m.streamOn(1)
	m.RecvType(st1, cdsURL)
	m.send(st1, cdsURL, "b-1", controlplane.Cluster(nameB, "x"))
	recB.Expect(t, xdsclient.NotifyResource, 0)

	m.srvs[0].Stop()
	recA := xdstest.NewWatcher()
	defer m.c.Watch(xdsresource.ClusterType, nameA, recA)()
	// A falls back to server 1, on the same stream as B.
	req := m.RecvType(st1, cdsURL)
	for len(req.GetResourceNames()) < 2 {
		req = m.RecvType(st1, cdsURL)
	}
	// Each server's requests name the resources of the authorities that
	// use it: server 1 both, server 0 A's alone.
	if got, want := names(req), []string{nameA, nameB}; !slices.Equal(got, want) {
		t.Fatalf("shared server's request names %v, want %v", got, want)
	}
	m.send(st1, cdsURL, "fb-1", controlplane.Cluster(nameB, "x"), controlplane.Cluster(nameA, "fb"))
	for {
		if e := recA.Next(t); e.Kind == xdsclient.NotifyResource {
			break
		}
	}
	if got := m.activeServer("a"); got.Server != m.srvs[1].Addr() {
		t.Fatalf("authority a uses %+v, want the fallback", got)
	}
	if got := m.activeServer("b"); got.Priority != 0 {
		t.Fatalf("authority b moved: %+v", got)
	}
	if n := countStarts(m.hooks, m.srvs[1].Addr()); n != 1 {
		t.Fatalf("%d streams to the shared server, want 1", n)
	}
	// A's primary returns; A switches back; server 1 stays for B and its
	// later update of A's resource is ignored.
	if err := m.srvs[0].Restart(); err != nil {
		t.Fatal(err)
	}
	st0 := m.streamOn(0)
	if got := names(m.RecvType(st0, cdsURL)); !slices.Equal(got, []string{nameA}) {
		t.Fatalf("A's primary's request names %v, want [%s]", got, nameA)
	}
	m.send(st0, cdsURL, "a-1", controlplane.Cluster(nameA, "primary"))
	if e := recA.Expect(t, xdsclient.NotifyResource, 0); e.Resource.Version != "a-1" {
		t.Fatalf("got %s", e.Resource.Version)
	}
	// The unsubscription of A's name on server 1 (after the ACK of fb-1,
	// which may still name it).
	req = m.RecvType(st1, cdsURL)
	for len(req.GetResourceNames()) == 2 {
		req = m.RecvType(st1, cdsURL)
	}
	if got := names(req); !slices.Equal(got, []string{nameB}) {
		t.Fatalf("after the switch back, server 1's request names %v, want [%s]", got, nameB)
	}
	m.send(st1, cdsURL, "fb-2", controlplane.Cluster(nameB, "y"), controlplane.Cluster(nameA, "late"))
	recB.Expect(t, xdsclient.NotifyResource, 0)
	recA.ExpectNone(t)
}

func countStarts(h *recordedHooks, server string) int {
	n := 0
	for _, s := range h.started.snapshot() {
		if s.Server == server {
			n++
		}
	}
	return n
}

// Federation: xdstp names are normalised, authorities without servers use
// the top-level ones, old-style names use the top-level servers.
func TestFederationNames(t *testing.T) {
	m := newMultiFixture(t, 1, func(addrs []string) string { return `{"a": {}}` })
	rec := xdstest.NewWatcher()
	defer m.c.Watch(xdsresource.ClusterType, "xdstp://a/envoy.config.cluster.v3.Cluster/c?z=1&b=2", rec)()
	rec2 := xdstest.NewWatcher()
	defer m.c.Watch(xdsresource.ClusterType, "old", rec2)()
	st := m.streamOn(0)
	req := m.RecvType(st, cdsURL)
	for len(req.GetResourceNames()) < 2 {
		req = m.RecvType(st, cdsURL)
	}
	want := "xdstp://a/envoy.config.cluster.v3.Cluster/c?b=2&z=1"
	if got := names(req); got[0] != "old" || got[1] != want {
		t.Fatalf("subscribed %v, want [old %s]", got, want)
	}
	// The server names the resource with its parameters in another order.
	m.send(st, cdsURL, "1", controlplane.Cluster("xdstp://a/envoy.config.cluster.v3.Cluster/c?z=1&b=2", "svc"), controlplane.Cluster("old", "old"))
	rec.Expect(t, xdsclient.NotifyResource, 0)
	rec2.Expect(t, xdsclient.NotifyResource, 0)
	for _, e := range m.c.Dump() {
		wantAuth := "#old"
		if e.Name == want {
			wantAuth = "a"
		}
		if e.Authority != wantAuth {
			t.Errorf("%s: authority %q, want %q", e.Name, e.Authority, wantAuth)
		}
	}
	// A wrong type segment is an error for the watcher.
	bad := xdstest.NewWatcher()
	defer m.c.Watch(xdsresource.ClusterType, "xdstp://a/envoy.config.listener.v3.Listener/x", bad)()
	bad.Expect(t, xdsclient.NotifyResourceError, codes.InvalidArgument)
}

// Names that canonicalise to one another are one resource, whichever side
// wrote which form: empty context parameters, percent-encoding and
// parameter order do not matter, also for names in TP3 resource_errors, and
// a subscription is always made with the canonical form.
func TestFederationNamesCanonicalForms(t *testing.T) {
	m := newMultiFixture(t, 1, func(addrs []string) string { return `{"a": {}}` })
	const prefix = "xdstp://a/envoy.config.cluster.v3.Cluster/"
	watches := []struct{ watched, served, canonical string }{
		{prefix + "x?&", prefix + "x", prefix + "x"},
		{prefix + "%79", prefix + "y", prefix + "y"},
		{prefix + "z?b=2&x=1", prefix + "z?x=1&b=2", prefix + "z?b=2&x=1"},
	}
	recs := make([]*xdstest.Watcher, len(watches))
	for i, w := range watches {
		recs[i] = xdstest.NewWatcher()
		defer m.c.Watch(xdsresource.ClusterType, w.watched, recs[i])()
	}
	st := m.streamOn(0)
	req := m.RecvType(st, cdsURL)
	for len(req.GetResourceNames()) < len(watches) {
		req = m.RecvType(st, cdsURL)
	}
	want := []string{prefix + "x", prefix + "y", prefix + "z?b=2&x=1"}
	if got := names(req); !slices.Equal(got, want) {
		t.Fatalf("subscribed %q, want %q", got, want)
	}
	m.send(st, cdsURL, "1", controlplane.Cluster(watches[0].served, "s"), controlplane.Cluster(watches[1].served, "s"), controlplane.Cluster(watches[2].served, "s"))
	for i, rec := range recs {
		if e := rec.Expect(t, xdsclient.NotifyResource, 0); e.Resource.Name != watches[i].canonical {
			t.Errorf("watch of %q got %q, want %q", watches[i].watched, e.Resource.Name, watches[i].canonical)
		}
	}
	// A TP3 error naming the resource in another form reaches its watcher
	// (ambient: the resource is cached).
	resp := xdstest.ErrorResponse(cdsURL, "2", xdstest.ResourceError(prefix+"z?x=1&b=2&", codes.PermissionDenied, "not for you"))
	resp.Resources = xdstest.Response(cdsURL, "2", controlplane.Cluster(watches[0].served, "s"), controlplane.Cluster(watches[1].served, "s")).Resources
	m.Send(st, resp)
	recs[2].Expect(t, xdsclient.NotifyAmbientError, codes.PermissionDenied)
	for _, e := range m.c.Dump() {
		if e.Name == want[2] && e.State != xdsclient.StateReceivedError {
			t.Errorf("%s: state %v, want RECEIVED_ERROR", e.Name, e.State)
		}
	}
}

// The same bytes from another server are a new resource: what a server may
// set depends on whether it is trusted (gRFC A81), and watchers learn which
// server the resource now comes from. Here the untrusted fallback's route
// has auto_host_rewrite ignored; the trusted primary's identical bytes,
// after the switch back, have it honoured.
func TestSameBytesFromAnotherServerRedelivered(t *testing.T) {
	t.Parallel()
	m := newMultiFixture(t, 2, func(addrs []string) string {
		return fmt.Sprintf(`{"a": {"xds_servers": [%s, %s]}}`, xdstest.ServerJSON(addrs[0], "trusted_xds_server"), xdstest.ServerJSON(addrs[1]))
	})
	rdsURL := xdsresource.RouteConfigType.TypeURL()
	name := "xdstp://a/envoy.config.route.v3.RouteConfiguration/r1"
	rc := controlplane.RouteConfig(name, []string{"*"}, "c1")
	rc.VirtualHosts[0].Routes[0].GetRoute().HostRewriteSpecifier = &routev3.RouteAction_AutoHostRewrite{AutoHostRewrite: wrapperspb.Bool(true)}
	rewrite := func(e xdstest.Callback) bool {
		return e.Resource.Value.(*routeconfig.Config).VirtualHosts[0].Routes[0].AutoHostRewrite
	}

	m.srvs[0].Stop()
	rec := xdstest.NewWatcher()
	defer m.c.Watch(xdsresource.RouteConfigType, name, rec)()
	fst := m.streamOn(1)
	m.RecvType(fst, rdsURL)
	m.send(fst, rdsURL, "1", rc)
	var e xdstest.Callback
	for e = rec.Next(t); e.Kind != xdsclient.NotifyResource; e = rec.Next(t) {
	}
	if e.Resource.Server != m.srvs[1].Addr() || rewrite(e) {
		t.Fatalf("from the fallback: server %s, auto_host_rewrite %v; want %s and false (untrusted)", e.Resource.Server, rewrite(e), m.srvs[1].Addr())
	}

	if err := m.srvs[0].Restart(); err != nil {
		t.Fatal(err)
	}
	pst := m.streamOn(0)
	m.RecvType(pst, rdsURL)
	m.send(pst, rdsURL, "1", rc)
	e = rec.Expect(t, xdsclient.NotifyResource, 0)
	if e.Resource.Server != m.srvs[0].Addr() || !rewrite(e) {
		t.Fatalf("same bytes from the primary: server %s, auto_host_rewrite %v; want %s and true (trusted)", e.Resource.Server, rewrite(e), m.srvs[0].Addr())
	}
	if got := m.entry(rdsURL, name); got.ResourceServer != m.srvs[0].Addr() || got.State != xdsclient.StateACKed {
		t.Errorf("cache entry from %s in %v, want the primary's, ACKED", got.ResourceServer, got.State)
	}
}
