package xdsgrpc_test

import (
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdslens/xdslens/internal/controlplane"
	"github.com/xdslens/xdslens/internal/xdstest"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// TestWithPoolTarget routes a channel with the pool's client of another
// target: the RPC reaches the backend, the pool holds that one client
// only, and its cache holds the channel's listener.
func TestWithPoolTarget(t *testing.T) {
	e := newEnv(t, 1)
	e.set(
		controlplane.Listener("svc", "svc-route"),
		routeConfig("svc-route", route(prefixMatch(""), toCluster("c"))),
		controlplane.Cluster("c", ""),
		endpoints("c", locality{zone: "z", weight: 1, addrs: []string{e.addr(0)}}),
	)
	shared, release, err := e.pool.Get("shared")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	conn, err := grpc.NewClient("xdslens:///svc",
		grpc.WithResolvers(xdsgrpc.NewBuilder(e.pool, xdsgrpc.WithPoolTarget("shared"))),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	o := call(xdstest.Context(t), conn, "/grpc.health.v1.Health/Check")
	if o.err != nil || o.backend != e.addr(0) || o.cluster != "c" {
		t.Fatalf("RPC: backend %q cluster %q err %v, want %s in cluster c", o.backend, o.cluster, o.err, e.addr(0))
	}
	if clients := e.pool.Clients(); len(clients) != 1 || clients[0] != shared {
		t.Errorf("the pool has %d clients, want only the one of target \"shared\"", len(clients))
	}
	found := false
	for _, s := range shared.Dump() {
		found = found || (s.TypeURL == xdsresource.ListenerType.TypeURL() && s.Name == "svc")
	}
	if !found {
		t.Error("the shared client's cache has no lds svc")
	}
}
