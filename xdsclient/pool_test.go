package xdsclient_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

func TestPoolRefcounts(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv := xdstest.NewADSServer(t)
	p := xdsclient.NewPool(bootstrapFor(t, srv.Addr()))
	var added, removed []string
	stop := p.Observe(func(c *xdsclient.Client) { added = append(added, c.Target()) }, func(c *xdsclient.Client) { removed = append(removed, c.Target()) })
	defer stop()

	a1, relA1, err := p.Get("xds:///a")
	if err != nil {
		t.Fatal(err)
	}
	a2, relA2, _ := p.Get("xds:///a")
	s, relS, _ := p.Get(xdsclient.ServerTarget)
	if a1 != a2 {
		t.Fatal("two Gets of one target gave two clients")
	}
	if a1 == s || s.Target() != "#server" {
		t.Fatalf("#server client %q shares with %q", s.Target(), a1.Target())
	}
	if got := targets(p.Clients()); fmt.Sprint(got) != "[#server xds:///a]" {
		t.Fatalf("Clients() = %v", got)
	}
	relA1()
	relA1() // a second call of one release does nothing
	if len(p.Clients()) != 2 {
		t.Fatal("client closed while a user still holds it")
	}
	relA2()
	if got := targets(p.Clients()); fmt.Sprint(got) != "[#server]" {
		t.Fatalf("after the last release Clients() = %v", got)
	}
	relS()
	if fmt.Sprint(added) != "[xds:///a #server]" || fmt.Sprint(removed) != "[xds:///a #server]" {
		t.Fatalf("observed added %v removed %v", added, removed)
	}
	// A released target is made anew on the next Get.
	a3, rel3, _ := p.Get("xds:///a")
	if a3 == a1 {
		t.Fatal("a closed client was handed out again")
	}
	rel3()
	srv.Stop()
}

func targets(cs []*xdsclient.Client) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Target())
	}
	return out
}

// Two targets are isolated: fallback in one does not move the other.
func TestPoolTargetsIsolated(t *testing.T) {
	primary, fallback := xdstest.NewADSServer(t), xdstest.NewADSServer(t)
	cfg := xdstest.Bootstrap{Servers: []string{primary.Addr(), fallback.Addr()}, Node: testNode}.Parse(t)
	ha, hb := newRecordedHooks(), newRecordedHooks()
	p := xdsclient.NewPool(cfg, xdsclient.WithFallback(true), xdsclient.WithBackoff(func(int) time.Duration { return time.Millisecond }))
	a, relA, _ := p.Get("a")
	defer relA()
	b, relB, _ := p.Get("b")
	defer relB()
	a.AddHooks(ha.hooks())
	b.AddHooks(hb.hooks())
	ctx := xdstest.Context(t)

	// b has its resource cached from the primary.
	recB := xdstest.NewWatcher()
	defer b.Watch(xdsresource.ClusterType, "cb", recB)()
	// a subscribes too; both streams reach the primary.
	recA := xdstest.NewWatcher()
	defer a.Watch(xdsresource.ClusterType, "ca", recA)()
	for i := 0; i < 2; i++ {
		st, err := primary.NextStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := st.RecvType(ctx, cdsURL)
		if req.GetResourceNames()[0] == "cb" {
			st.Send(xdstest.Response(cdsURL, "1", controlplane.Cluster("cb", "x")))
		}
	}
	recB.Expect(t, xdsclient.NotifyResource, 0)
	primary.Stop()
	// a waits on an uncached resource: it falls back; b has everything.
	fst, err := fallback.NextStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fst.RecvType(ctx, cdsURL)
	fst.Send(xdstest.Response(cdsURL, "fb", controlplane.Cluster("ca", "y")))
	for {
		if e := recA.Next(t); e.Kind == xdsclient.NotifyResource {
			break
		}
	}
	recB.Expect(t, xdsclient.NotifyAmbientError, codes.Unavailable)
	for _, s := range hb.started.snapshot() {
		if s.Server == fallback.Addr() {
			t.Fatal("target b connected to the fallback server")
		}
	}
	ha.authServer.waitFor(t, "a falls back", func(i xdsclient.AuthorityServerInfo) bool { return i.Priority == 1 })
}

func TestDefaultPoolFromEnvironment(t *testing.T) {
	srv := xdstest.NewADSServer(t)
	t.Setenv(bootstrap.EnvBootstrapFile, "")
	t.Setenv(bootstrap.EnvBootstrapConfig, xdstest.Bootstrap{Servers: []string{srv.Addr()}, Node: `{"id": "env-node"}`}.JSON())
	c, release, err := xdsclient.DefaultPool().Get("xds:///default-pool-test")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if c.Node().GetId() != "env-node" {
		t.Fatalf("node %q, want env-node from GRPC_XDS_BOOTSTRAP_CONFIG", c.Node().GetId())
	}
}

// Observer calls run under no lock: an observer may call the Pool, even Get
// and release, and its calls come in the order of their events.
func TestPoolObserverMayCallThePool(t *testing.T) {
	pool := xdsclient.NewPool(bootstrapFor(t, "127.0.0.1:1"), xdstest.ClientOptions()...)
	var mu sync.Mutex
	var events []string
	record := func(s string) {
		mu.Lock()
		events = append(events, s)
		mu.Unlock()
	}
	stop := pool.Observe(func(c *xdsclient.Client) {
		record("added " + c.Target())
		if c.Target() == "a" {
			record(fmt.Sprintf("clients seen from added: %d", len(pool.Clients())))
			_, release, err := pool.Get("b")
			if err != nil {
				t.Error(err)
				return
			}
			release()
		}
	}, func(c *xdsclient.Client) { record("removed " + c.Target()) })
	defer stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, release, err := pool.Get("a")
		if err != nil {
			t.Error(err)
			return
		}
		release()
	}()
	waitDone(t, done, "Get with an observer that calls the pool")
	mu.Lock()
	defer mu.Unlock()
	want := []string{"added a", "clients seen from added: 1", "added b", "removed b", "removed a"}
	if !slices.Equal(events, want) {
		t.Fatalf("observer calls %q, want %q", events, want)
	}
}
