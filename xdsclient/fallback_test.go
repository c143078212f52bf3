package xdsclient_test

// gRFC A71 fallback and gRFC A47 federation, with several scripted ADS
// servers on loopback that are stopped and restarted on the same port.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/controlplane"
	"github.com/xdslens/xdslens/internal/xdstest"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

func serverJSON(addrs ...string) string {
	var parts []string
	for _, a := range addrs {
		parts = append(parts, fmt.Sprintf(`{"server_uri": %q, "channel_creds": [{"type": "insecure"}]}`, a))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// multiFixture is a client over several scripted servers.
type multiFixture struct {
	*fixture
	srvs []*xdstest.ADSServer
}

// newMultiFixture makes n servers, all top-level in priority order, and
// extra authorities given as JSON (may be "").
func newMultiFixture(t *testing.T, n int, authorities func(addrs []string) string, opts ...xdsclient.Option) *multiFixture {
	t.Helper()
	m := &multiFixture{fixture: &fixture{t: t, ctx: ctxT(t), hooks: newRecordedHooks()}}
	var addrs []string
	for i := 0; i < n; i++ {
		s := xdstest.NewADSServer(t)
		m.srvs = append(m.srvs, s)
		addrs = append(addrs, s.Addr())
	}
	auth := ""
	if authorities != nil {
		auth = `, "authorities": ` + authorities(addrs)
	}
	cfg, err := bootstrap.Parse([]byte(fmt.Sprintf(`{"xds_servers": %s, "node": {"id": %q}%s}`, serverJSON(addrs...), testNodeID, auth)))
	if err != nil {
		t.Fatal(err)
	}
	m.srv = m.srvs[0]
	m.c = newClient(t, cfg, append([]xdsclient.Option{xdsclient.WithHooks(m.hooks.hooks()), xdsclient.WithFallback(true)}, opts...)...)
	return m
}

func (m *multiFixture) streamOn(i int) *xdstest.Stream {
	m.t.Helper()
	st, err := m.srvs[i].NextStream(m.ctx)
	if err != nil {
		m.t.Fatalf("waiting for a stream on server %d: %v", i, err)
	}
	return st
}

// serve answers the next CDS request on st with clusters at version v.
func (m *multiFixture) serve(st *xdstest.Stream, v string, names ...string) {
	m.t.Helper()
	m.recv(st, cdsURL)
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
	m := newMultiFixture(t, 2, nil)
	m.srvs[0].Stop()
	rec := newRecorder()
	defer m.c.Watch(xdsresource.ClusterType, "c1", rec)()
	st := m.streamOn(1)
	m.serve(st, "fallback-1", "c1")
	for {
		e := rec.next(t)
		if e.kind == xdsclient.NotifyResource {
			if got := e.res.Server; got != m.srvs[1].Addr() {
				t.Fatalf("resource from %q, want the fallback %q", got, m.srvs[1].Addr())
			}
			break
		}
		if status := e.err; status != nil && !contains(status, m.srvs[0].Addr()) {
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
	e := rec.expect(t, xdsclient.NotifyResource, 0)
	if e.res.Server != m.srvs[0].Addr() || e.res.Version != "primary-1" {
		t.Fatalf("after switch back got %s from %s, want primary-1 from the primary", e.res.Version, e.res.Server)
	}
	select {
	case <-st.Done():
	case <-m.ctx.Done():
		t.Fatal("the fallback stream was not closed after the switch back")
	}
	m.hooks.authServer.waitFor(t, "switch back", func(i xdsclient.AuthorityServerInfo) bool { return i.Priority == 0 && i.Previous == m.srvs[1].Addr() })
	rec.empty(t)
}

func TestFallbackNotWhenEverythingCached(t *testing.T) {
	m := newMultiFixture(t, 2, nil)
	rec := newRecorder()
	defer m.c.Watch(xdsresource.ClusterType, "c1", rec)()
	st := m.streamOn(0)
	m.serve(st, "1", "c1")
	rec.expect(t, xdsclient.NotifyResource, 0)
	m.srvs[0].Stop()
	rec.expect(t, xdsclient.NotifyAmbientError, codes.Unavailable)
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
	r1 := newRecorder()
	defer m.c.Watch(xdsresource.ClusterType, "c1", r1)()
	st := m.streamOn(0)
	m.serve(st, "1", "c1")
	r1.expect(t, xdsclient.NotifyResource, 0)
	m.srvs[0].Stop()
	r1.expect(t, xdsclient.NotifyAmbientError, codes.Unavailable)
	m.hooks.failures.waitFor(t, "failure", func(xdsclient.ServerFailureInfo) bool { return true })

	r2 := newRecorder()
	defer m.c.Watch(xdsresource.ClusterType, "c2", r2)()
	fst := m.streamOn(1)
	req := m.recv(fst, cdsURL)
	if got := names(req); len(got) != 2 {
		t.Fatalf("fallback subscription %v, want every watched resource", got)
	}
	// The fallback server has c2 only; c1 stays as the primary sent it.
	m.send(fst, cdsURL, "fb-1", controlplane.Cluster("c2", "fb"))
	r2.expect(t, xdsclient.NotifyResource, 0)
	m.checkEntry(cdsURL, "c1", xdsclient.StateDoesNotExist, true)
	// c1's deletion by the fallback's full state is ambient under A88; the
	// resource stays in use.
	for {
		e := r1.next(t)
		if e.kind != xdsclient.NotifyAmbientError {
			t.Fatalf("c1 got %v, want only ambient errors", e)
		}
		if status.Code(e.err) == codes.NotFound {
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
	rec := newRecorder()
	defer m.c.Watch(xdsresource.ClusterType, "c1", rec)()
	pst := m.streamOn(0)
	m.recv(pst, cdsURL)
	pst.End(errUnavailable("primary broken"))
	fst := m.streamOn(1)
	m.serve(fst, "fb-1", "c1")
	for {
		if e := rec.next(t); e.kind == xdsclient.NotifyResource {
			break
		}
	}
	// The primary keeps failing; each retry must stay between the client
	// and the primary.
	for i := 0; i < 3; i++ {
		st := m.streamOn(0)
		m.recv(st, cdsURL)
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
	m.recv(fst, cdsURL)
	m.send(fst, cdsURL, "fb-2", controlplane.Cluster("c1", "fb-2"))
	e := rec.next(t)
	if e.kind != xdsclient.NotifyResource {
		t.Fatalf("watcher served by the fallback got %v from the primary's failed retries", e)
	}
}

func TestFallbackThreeServers(t *testing.T) {
	m := newMultiFixture(t, 3, nil)
	m.srvs[0].Stop()
	m.srvs[1].Stop()
	rec := newRecorder()
	defer m.c.Watch(xdsresource.ClusterType, "c1", rec)()
	st2 := m.streamOn(2)
	m.serve(st2, "third", "c1")
	for {
		if e := rec.next(t); e.kind == xdsclient.NotifyResource {
			if e.res.Server != m.srvs[2].Addr() {
				t.Fatalf("resource from %s, want the third server", e.res.Server)
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
	if e := rec.expect(t, xdsclient.NotifyResource, 0); e.res.Version != "second" {
		t.Fatalf("got %s, want the second server's", e.res.Version)
	}
	<-st2.Done()
	// Then the primary.
	if err := m.srvs[0].Restart(); err != nil {
		t.Fatal(err)
	}
	st0 := m.streamOn(0)
	m.serve(st0, "primary", "c1")
	if e := rec.expect(t, xdsclient.NotifyResource, 0); e.res.Version != "primary" {
		t.Fatalf("got %s, want the primary's", e.res.Version)
	}
	<-st1.Done()
}

func TestFallbackDisabled(t *testing.T) {
	m := newMultiFixture(t, 2, nil, xdsclient.WithFallback(false))
	m.srvs[0].Stop()
	rec := newRecorder()
	defer m.c.Watch(xdsresource.ClusterType, "c1", rec)()
	rec.expect(t, xdsclient.NotifyResourceError, codes.Unavailable)
	rec.expect(t, xdsclient.NotifyResourceError, codes.Unavailable)
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
	cfg, err := bootstrap.Parse([]byte(fmt.Sprintf(`{"xds_servers": %s}`, serverJSON(srvA.Addr(), srvB.Addr()))))
	if err != nil {
		t.Fatal(err)
	}
	h := newRecordedHooks()
	c, err := xdsclient.New(cfg, xdsclient.WithHooks(h.hooks()), xdsclient.WithBackoff(func(int) time.Duration { return time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rec := newRecorder()
	defer c.Watch(xdsresource.ClusterType, "c1", rec)()
	rec.expect(t, xdsclient.NotifyResourceError, codes.Unavailable)
	rec.expect(t, xdsclient.NotifyResourceError, codes.Unavailable)
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
	// Servers: 0 primary of A; 1 fallback of A and primary of B.
	m := newMultiFixture(t, 2, func(addrs []string) string {
		return fmt.Sprintf(`{"a": {"xds_servers": %s}, "b": {"xds_servers": %s}}`, serverJSON(addrs[0], addrs[1]), serverJSON(addrs[1]))
	})
	nameA := "xdstp://a/envoy.config.cluster.v3.Cluster/ca"
	nameB := "xdstp://b/envoy.config.cluster.v3.Cluster/cb"
	recB := newRecorder()
	defer m.c.Watch(xdsresource.ClusterType, nameB, recB)()
	st1 := m.streamOn(1)
	m.recv(st1, cdsURL)
	m.send(st1, cdsURL, "b-1", controlplane.Cluster(nameB, "x"))
	recB.expect(t, xdsclient.NotifyResource, 0)

	m.srvs[0].Stop()
	recA := newRecorder()
	defer m.c.Watch(xdsresource.ClusterType, nameA, recA)()
	// A falls back to server 1, on the same stream as B.
	req := m.recv(st1, cdsURL)
	for len(req.GetResourceNames()) < 2 {
		req = m.recv(st1, cdsURL)
	}
	m.send(st1, cdsURL, "fb-1", controlplane.Cluster(nameB, "x"), controlplane.Cluster(nameA, "fb"))
	for {
		if e := recA.next(t); e.kind == xdsclient.NotifyResource {
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
	m.recv(st0, cdsURL)
	m.send(st0, cdsURL, "a-1", controlplane.Cluster(nameA, "primary"))
	if e := recA.expect(t, xdsclient.NotifyResource, 0); e.res.Version != "a-1" {
		t.Fatalf("got %s", e.res.Version)
	}
	m.recv(st1, cdsURL) // the unsubscription of A's name on server 1
	m.send(st1, cdsURL, "fb-2", controlplane.Cluster(nameB, "y"), controlplane.Cluster(nameA, "late"))
	recB.expect(t, xdsclient.NotifyResource, 0)
	recA.empty(t)
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
	rec := newRecorder()
	defer m.c.Watch(xdsresource.ClusterType, "xdstp://a/envoy.config.cluster.v3.Cluster/c?z=1&b=2", rec)()
	rec2 := newRecorder()
	defer m.c.Watch(xdsresource.ClusterType, "old", rec2)()
	st := m.streamOn(0)
	req := m.recv(st, cdsURL)
	for len(req.GetResourceNames()) < 2 {
		req = m.recv(st, cdsURL)
	}
	want := "xdstp://a/envoy.config.cluster.v3.Cluster/c?b=2&z=1"
	if got := names(req); got[0] != "old" || got[1] != want {
		t.Fatalf("subscribed %v, want [old %s]", got, want)
	}
	// The server names the resource with its parameters in another order.
	m.send(st, cdsURL, "1", controlplane.Cluster("xdstp://a/envoy.config.cluster.v3.Cluster/c?z=1&b=2", "svc"), controlplane.Cluster("old", "old"))
	rec.expect(t, xdsclient.NotifyResource, 0)
	rec2.expect(t, xdsclient.NotifyResource, 0)
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
	bad := newRecorder()
	defer m.c.Watch(xdsresource.ClusterType, "xdstp://a/envoy.config.listener.v3.Listener/x", bad)()
	bad.expect(t, xdsclient.NotifyResourceError, codes.InvalidArgument)
}
