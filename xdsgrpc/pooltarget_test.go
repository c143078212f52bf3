package xdsgrpc_test

import (
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

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

// TestCircuitBreakingAcrossBuilders has two Builders give their channels
// the same xDS client: an RPC held on one channel counts against the
// cluster's max_requests of 1 for the other, as gRPC counts a cluster's
// RPCs across the channels of one xDS client, and both Builders report the
// counter.
func TestCircuitBreakingAcrossBuilders(t *testing.T) {
	e := newEnv(t, 1)
	limited := controlplane.Cluster("c", "")
	limited.CircuitBreakers = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{MaxRequests: wrapperspb.UInt32(1)}}}
	e.set(controlplane.Listener("svc", "svc-route"),
		routeConfig("svc-route", route(prefixMatch(""), toCluster("c"))),
		limited, controlplane.Endpoints("c", e.addr(0)))
	var builders []*xdsgrpc.Builder
	var conns []*grpc.ClientConn
	for range 2 {
		b := xdsgrpc.NewBuilder(e.pool, xdsgrpc.WithPoolTarget("shared"))
		conn, err := grpc.NewClient("xdslens:///svc", grpc.WithResolvers(b), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		builders, conns = append(builders, b), append(conns, conn)
	}
	ctx := xdstest.Context(t)
	for _, conn := range conns {
		if o := call(ctx, conn, emptyCall); o.err != nil {
			t.Fatal(o.err)
		}
	}
	release := e.backends[0].Hold()
	held := make(chan outcome, 1)
	go func() { held <- call(ctx, conns[0], emptyCall) }()
	if err := e.backends[0].WaitCalls(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if o := call(ctx, conns[1], emptyCall); status.Code(o.err) != codes.Unavailable || !strings.Contains(o.err.Error(), "max_requests 1") {
		t.Errorf("RPC on the second channel: %v, want UNAVAILABLE naming max_requests 1", o.err)
	}
	for i, b := range builders {
		if got := b.InFlight(); len(got) != 1 || got[0].InFlight != 1 || got[0].Target != "shared" {
			t.Errorf("builder %d: InFlight() = %+v, want cluster c at 1 for target shared", i, got)
		}
	}
	release()
	if o := <-held; o.err != nil {
		t.Error(o.err)
	}
}
