package xdsgrpc_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

// openFiles returns the number of file descriptors the process has open.
func openFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count file descriptors: %v", err)
	}
	return len(fds)
}

// TestConnectionsSharedByAddress routes RPCs to 1,000 clusters whose
// endpoints are the same 2 addresses: the channel opens one connection per
// address, not one per cluster and address, so the process's descriptors
// grow by a handful (each connection is two descriptors here, the client's
// and the backend's), where 2,000 connections would take 4,000.
func TestConnectionsSharedByAddress(t *testing.T) {
	const n = 1000
	e := rpctest.NewEnv(t, 2)
	ctx := xdstest.Context(t)
	res := []proto.Message{controlplane.Listener("L", "R")}
	var routes []*routev3.Route
	for i := range n {
		c := fmt.Sprintf("c%d", i)
		routes = append(routes, rpctest.Route(rpctest.PathMatch(fmt.Sprintf("/pkg.S%d/M", i)), rpctest.ToCluster(c)))
		res = append(res, controlplane.Cluster(c, ""), controlplane.Endpoints(c, e.Addr(0), e.Addr(1)))
	}
	res = append(res, rpctest.RouteConfig("R", routes...))
	e.Set(res...)
	before := openFiles(t)
	conn := e.Dial("xdslens:///L")
	if !rpctest.Poll(ctx, func(ctx context.Context) bool { return rpctest.Call(ctx, conn, "/pkg.S0/M").Err == nil }) {
		t.Fatal("cluster c0 never served")
	}
	for i := range n {
		if o := rpctest.Call(ctx, conn, fmt.Sprintf("/pkg.S%d/M", i)); o.Err != nil {
			t.Fatalf("RPC to cluster c%d: %v", i, o.Err)
		}
	}
	if grown := openFiles(t) - before; grown > 40 {
		t.Errorf("routing to %d clusters over 2 addresses opened %d descriptors, want a handful (one connection per address)", n, grown)
	}
}
