package rpctest_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit))
}

// The helpers route RPCs as they say: by exact path, header, regex and
// prefix, in order, to the cluster of the backend that answers; an
// unknown method counts as answered.
func TestEnvRoutes(t *testing.T) {
	e := rpctest.NewEnv(t, 3)
	e.Set(controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route",
			rpctest.Route(rpctest.PathMatch("/pkg.Svc/Exact"), rpctest.ToCluster("a")),
			rpctest.Route(rpctest.WithHeader(rpctest.PrefixMatch("/pkg."), "x-to", "b"), rpctest.ToCluster("b")),
			rpctest.Route(rpctest.RegexMatch("/pkg\\.Svc/R[0-9]+"), rpctest.ToCluster("b")),
			rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToWeighted(rpctest.WeightedCluster{Name: "c", Weight: 1}))),
		controlplane.Cluster("a", ""), controlplane.Endpoints("a", e.Addr(0)),
		controlplane.Cluster("b", ""), controlplane.Endpoints("b", e.Addr(1)),
		controlplane.Cluster("c", ""),
		rpctest.LocalityEndpoints("c", rpctest.Locality{Zone: "z", Weight: 1, Priority: 0, Addrs: []string{e.Addr(2)}}))
	conn := e.Dial("xdslens:///svc")
	ctx := xdstest.Context(t)
	if !rpctest.Poll(ctx, func(ctx context.Context) bool { return rpctest.Call(ctx, conn, "/pkg.Svc/Exact").Err == nil }) {
		t.Fatal("no RPC succeeded")
	}
	for _, tc := range []struct {
		method  string
		md      []string
		backend int
		cluster string
	}{
		{"/pkg.Svc/Exact", nil, 0, "a"},
		{"/pkg.Svc/Exact", []string{"x-to", "b"}, 0, "a"},
		{"/pkg.Svc/Other", []string{"x-to", "b"}, 1, "b"},
		{"/pkg.Svc/R42", nil, 1, "b"},
		{"/pkg.Svc/Rx", nil, 2, "c"},
	} {
		o := rpctest.Call(ctx, conn, tc.method, tc.md...)
		if o.Err != nil || o.Backend != e.Addr(tc.backend) || o.Cluster != tc.cluster {
			t.Errorf("%s %v: %+v, want backend %d (%s) in cluster %s", tc.method, tc.md, o, tc.backend, e.Addr(tc.backend), tc.cluster)
		}
	}
}

// Poll gives up when its context ends, and an RPC that no backend
// answered has its error and code.
func TestPollEndsAndCallFails(t *testing.T) {
	e := rpctest.NewEnv(t, 0)
	conn := e.Dial("xdslens:///nothing-served")
	ctx, cancel := context.WithTimeout(xdstest.Context(t), 200*time.Millisecond)
	defer cancel()
	var last rpctest.Outcome
	if rpctest.Poll(ctx, func(ctx context.Context) bool { last = rpctest.Call(ctx, conn, "/pkg.Svc/M"); return last.Err == nil }) {
		t.Fatalf("Poll reported success: %+v", last)
	}
	if last.Backend != "" || last.Err == nil || rpctest.Code(last.Err) == "OK" {
		t.Errorf("RPC of an unserved target: %+v, want an error and no backend", last)
	}
}
