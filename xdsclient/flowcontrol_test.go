package xdsclient_test

import (
	"sync"
	"testing"
	"time"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// Flow control is per stream: a watcher that blocks holds back the stream
// of the server whose update it handles, and only that one. The other
// server's stream keeps delivering to its watchers.
func TestFlowControlPerStream(t *testing.T) {
	const other = "xdstp://b/envoy.config.cluster.v3.Cluster/c2"
	m := newMultiFixture(t, 2, func(addrs []string) string {
		return `{"b": {"xds_servers": ` + xdstest.ServersJSON(addrs[1]) + `}}`
	})
	release := make(chan struct{})
	var releaseOnce sync.Once
	got := make(chan string, 10)
	defer m.c.Watch(xdsresource.ClusterType, "c1", xdsclient.WatcherFuncs{
		OnResourceChanged: func(r *xdsclient.Resource, err error) {
			if err == nil {
				got <- r.Version
				<-release
			}
		},
	})()
	rec := xdstest.NewWatcher()
	defer m.c.Watch(xdsresource.ClusterType, other, rec)()
	// cancel waits for a running callback: release it first if the test
	// fails while the watcher blocks.
	defer releaseOnce.Do(func() { close(release) })

	st0 := m.streamOn(0)
	m.serve(st0, "1", "c1")
	select {
	case v := <-got:
		if v != "1" {
			t.Fatalf("first delivery from server 0: version %q, want 1", v)
		}
	case <-m.Ctx.Done():
		t.Fatal("no delivery from server 0")
	}
	// The watcher of c1 now blocks: server 0's next response waits.
	m.send(st0, cdsURL, "2", controlplane.Cluster("c1", "c1-v2"))

	st1 := m.streamOn(1)
	m.serve(st1, "1", other)
	if e := rec.Next(t); e.Kind != xdsclient.NotifyResource || e.Resource.Name != other {
		t.Fatalf("while server 0's watcher blocked, server 1's watcher got %v, want its resource", e)
	}
	m.send(st1, cdsURL, "2", controlplane.Cluster(other, "c2-v2"))
	if e := rec.Next(t); e.Kind != xdsclient.NotifyResource || e.Resource.Version != "2" {
		t.Fatalf("server 1's second update: %v, want version 2", e)
	}
	if n := responsesFrom(m, m.srvs[0].Addr()); n != 1 {
		t.Fatalf("%d responses of server 0 processed while its watcher blocked, want 1", n)
	}

	releaseOnce.Do(func() { close(release) })
	select {
	case v := <-got:
		if v != "2" {
			t.Fatalf("second delivery from server 0: version %q, want 2", v)
		}
	case <-time.After(xdstest.Timeout):
		t.Fatal("server 0's second update never came once its watcher returned")
	}
}

// responsesFrom counts the ResponseReceived hooks of server addr.
func responsesFrom(m *multiFixture, addr string) int {
	n := 0
	for _, r := range m.hooks.responses.snapshot() {
		if r.Server == addr {
			n++
		}
	}
	return n
}
