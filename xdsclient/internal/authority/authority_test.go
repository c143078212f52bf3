package authority_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/internal/authority"
	"github.com/xdslens/xdslens/xdsclient/internal/cache"
	"github.com/xdslens/xdslens/xdsclient/internal/lane"
	"github.com/xdslens/xdslens/xdsclient/internal/transport"
	"github.com/xdslens/xdslens/xdsclient/internal/txn"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// gRFC A71: a resource wanted from an authority whose primary server
// cannot be reached is asked of the next server, over real connections:
// the primary fails (a server failure), the authority switches to the
// fallback server, and the fallback's stream subscribes to the resource.
func TestFallbackWhenThePrimaryIsUnreachable(t *testing.T) {
	primary := xdstest.ClosedAddr(t)
	fallback := xdstest.NewADSServer(t)
	cfg, err := bootstrap.Parse([]byte(xdstest.Bootstrap{Servers: []string{primary, fallback.Addr()}, Node: `{"id": "n"}`}.JSON()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu    txn.Mutex
		wg    sync.WaitGroup
		lanes lane.Set
	)
	rec := newEvents()
	c := cache.New(cache.Config{Mutex: &mu, NodeID: "n", Observer: rec,
		Deliver: func(int) func(int, cache.Delivery) any { return func(_ int, d cache.Delivery) any { return d } }})
	as := authority.New(authority.Config{
		Mutex: &mu, Cache: c, Bootstrap: cfg, Fallback: true,
		Transport: transport.Config{Node: &corev3.Node{Id: "n"}, Backoff: func(int) time.Duration { return 10 * time.Millisecond }, Group: &wg},
		Delta:     func(*bootstrap.ServerConfig) bool { return false }, ResourceTimeout: time.Hour,
		DecodeOptions: func(*bootstrap.ServerConfig) xdsresource.DecodeOptions { return xdsresource.DecodeOptions{} },
		Context:       ctx, Lanes: &lanes, Deliver: func(*cache.Watcher, any, error, bool) {}, Observer: rec,
	})
	t.Cleanup(func() {
		tx := mu.Lock()
		as.Close(tx, errors.New("test over"))
		tx.Unlock()
		cancel()
		wg.Wait()
		lanes.Wait()
	})

	tx := mu.Lock()
	k, err := c.Register(tx, cache.Describe(xdsresource.ClusterType))
	if err != nil {
		tx.Unlock()
		t.Fatal(err)
	}
	a, err := as.Get(tx, "c1")
	if err != nil {
		tx.Unlock()
		t.Fatal(err)
	}
	as.Subscribe(tx, a, c.Add(tx, k, "c1", a.Group()))
	tx.Unlock()

	next := func(what string) switched {
		t.Helper()
		select {
		case sw := <-rec.switches:
			return sw
		case <-xdstest.Context(t).Done():
			t.Fatalf("no %s", what)
		}
		return switched{}
	}
	if sw := next("initial server"); sw != (switched{authority: "#old", server: primary}) {
		t.Fatalf("first switch %+v, want the primary %s", sw, primary)
	}
	if sw := next("fallback"); sw != (switched{authority: "#old", server: fallback.Addr(), prev: primary, priority: 1}) {
		t.Fatalf("second switch %+v, want the fallback %s at priority 1, from %s", sw, fallback.Addr(), primary)
	}
	select {
	case uri := <-rec.failures:
		if uri != primary {
			t.Errorf("server failure of %s, want the primary %s", uri, primary)
		}
	default:
		t.Error("the primary's failure was not reported")
	}
	s := xdstest.Script{T: t, Ctx: xdstest.Context(t), Srv: fallback}
	st := s.NextStream()
	if req := s.RecvType(st, xdsresource.ClusterType.TypeURL()); len(req.GetResourceNames()) != 1 || req.GetResourceNames()[0] != "c1" {
		t.Errorf("fallback's first CDS request names %v, want [c1]", req.GetResourceNames())
	}
	tx = mu.Lock()
	active, prio := a.Active(tx)
	tx.Unlock()
	if active.URI() != fallback.Addr() || prio != 1 {
		t.Errorf("authority's active server %s at priority %d, want %s at 1", active.URI(), prio, fallback.Addr())
	}
}
