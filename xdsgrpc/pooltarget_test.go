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

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// TestWithPoolTarget routes a channel with the pool's client of another
// target: the RPC reaches the backend, the pool holds that one client
// only, and its cache holds the channel's listener.
func TestWithPoolTarget(t *testing.T) {
	e := rpctest.NewEnv(t, 1)
	e.Set(
		controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route", rpctest.Route(rpctest.PrefixMatch(""), rpctest.ToCluster("c"))),
		controlplane.Cluster("c", ""),
		rpctest.LocalityEndpoints("c", rpctest.Locality{Zone: "z", Weight: 1, Addrs: []string{e.Addr(0)}}),
	)
	shared, release, err := e.Pool.Get("shared")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	conn, err := grpc.NewClient("xdslens:///svc",
		grpc.WithResolvers(xdsgrpc.NewBuilder(e.Pool, xdsgrpc.WithPoolTarget("shared"))),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	o := rpctest.Call(xdstest.Context(t), conn, "/grpc.health.v1.Health/Check")
	if o.Err != nil || o.Backend != e.Addr(0) || o.Cluster != "c" {
		t.Fatalf("RPC: backend %q cluster %q err %v, want %s in cluster c", o.Backend, o.Cluster, o.Err, e.Addr(0))
	}
	if clients := e.Pool.Clients(); len(clients) != 1 || clients[0] != shared {
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
	e := rpctest.NewEnv(t, 1)
	limited := controlplane.Cluster("c", "")
	limited.CircuitBreakers = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{MaxRequests: wrapperspb.UInt32(1)}}}
	e.Set(controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route", rpctest.Route(rpctest.PrefixMatch(""), rpctest.ToCluster("c"))),
		limited, controlplane.Endpoints("c", e.Addr(0)))
	var builders []*xdsgrpc.Builder
	var conns []*grpc.ClientConn
	for range 2 {
		b := xdsgrpc.NewBuilder(e.Pool, xdsgrpc.WithPoolTarget("shared"))
		conn, err := grpc.NewClient("xdslens:///svc", grpc.WithResolvers(b), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		builders, conns = append(builders, b), append(conns, conn)
	}
	ctx := xdstest.Context(t)
	for _, conn := range conns {
		if o := rpctest.Call(ctx, conn, emptyCall); o.Err != nil {
			t.Fatal(o.Err)
		}
	}
	release := e.Backends[0].Hold()
	held := make(chan rpctest.Outcome, 1)
	go func() { held <- rpctest.Call(ctx, conns[0], emptyCall) }()
	if err := e.Backends[0].WaitCalls(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if o := rpctest.Call(ctx, conns[1], emptyCall); status.Code(o.Err) != codes.Unavailable || !strings.Contains(o.Err.Error(), "max_requests 1") {
		t.Errorf("RPC on the second channel: %v, want UNAVAILABLE naming max_requests 1", o.Err)
	}
	for i, b := range builders {
		if got := b.InFlight(); len(got) != 1 || got[0].InFlight != 1 || got[0].Target != "shared" {
			t.Errorf("builder %d: InFlight() = %+v, want cluster c at 1 for target shared", i, got)
		}
	}
	release()
	if o := <-held; o.Err != nil {
		t.Error(o.Err)
	}
}
