package xdsgrpc_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient/lrs"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// attemptRecorder is a stats.Handler that keeps RoutingOf of each attempt
// when it ends, and an interceptor that counts the calls it sees.
type attemptRecorder struct {
	mu       sync.Mutex
	attempts []xdsgrpc.Routing
	routed   []bool // RoutingOf's answer, by attempt
	calls    int
}

func (r *attemptRecorder) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return ctx
}
func (r *attemptRecorder) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if _, ok := s.(*stats.End); !ok {
		return
	}
	rt, ok := xdsgrpc.RoutingOf(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts, r.routed = append(r.attempts, rt), append(r.routed, ok)
}
func (r *attemptRecorder) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (r *attemptRecorder) HandleConn(context.Context, stats.ConnStats) {}

func (r *attemptRecorder) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	r.mu.Lock()
	r.calls++
	r.mu.Unlock()
	return invoker(ctx, method, req, reply, cc, opts...)
}

// reset forgets what was recorded.
func (r *attemptRecorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts, r.routed, r.calls = nil, nil, 0
}

type tagKey struct{}

// TestRoutingOfEachAttempt dials with a stats.Handler and an interceptor
// given by WithDialOptions: the interceptor sees a retried RPC once, the
// handler each of its two attempts, and RoutingOf gives each attempt's
// routing: listener, route configuration and its version, virtual host,
// the route's name and index as received, cluster, leaf, policy,
// locality and endpoint. The Retried and FaultInjected hooks get the
// RPC's context.
func TestRoutingOfEachAttempt(t *testing.T) {
	var rec attemptRecorder
	var h resilienceHooks
	e := rpctest.NewEnv(t, 1, xdsgrpc.WithHooks(h.hooks()),
		xdsgrpc.WithDialOptions(grpc.WithStatsHandler(&rec), grpc.WithChainUnaryInterceptor(rec.intercept)))
	named := rpctest.Route(rpctest.PrefixMatch("/grpc.testing."), controlplane.WithRetry(rpctest.ToCluster("c"), "unavailable", 2, time.Millisecond, time.Millisecond))
	named.Name = "testing"
	e.Set(controlplane.ListenerWithFault("L", "R", controlplane.FaultAbort(uint32(codes.ResourceExhausted), 100), 0),
		rpctest.RouteConfig("R",
			rpctest.Route(rpctest.PathMatch("/other.S/Exact"), rpctest.ToCluster("c")),
			controlplane.WithFaultOverride(named, controlplane.FaultAbort(0, 0)),
			rpctest.Route(rpctest.PrefixMatch("/aborted."), rpctest.ToCluster("c"))),
		controlplane.Cluster("c", ""),
		rpctest.LocalityEndpoints("c", rpctest.Locality{Zone: "z1", Weight: 1, Addrs: []string{e.Addr(0)}}))
	conn := e.Dial("xdslens:///L")
	ctx := context.WithValue(xdstest.Context(t), tagKey{}, "mine")
	if !rpctest.Poll(ctx, func(ctx context.Context) bool {
		return rpctest.Call(ctx, conn, "/grpc.testing.TestService/EmptyCall").Err == nil
	}) {
		t.Fatal("no RPC succeeded")
	}
	rec.reset()
	e.Backends[0].Fail(backends.Failure{Every: 2})
	if err := conn.Invoke(ctx, "/grpc.testing.TestService/EmptyCall", &emptypb.Empty{}, &emptypb.Empty{}); err != nil {
		t.Fatal(err)
	}
	want := xdsgrpc.Routing{
		Target:   "xdslens:///L",
		Listener: "L", ListenerVersion: "1", RouteConfig: "R", RouteConfigVersion: "1", VirtualHost: "R-vh",
		RouteIndex: 1, RouteName: "testing", Cluster: "c", Leaf: "c", Policy: "round_robin",
		Locality: lrs.Locality{Region: "r", Zone: "z1"}, Address: e.Addr(0),
	}
	rec.mu.Lock()
	if rec.calls != 1 || len(rec.attempts) != 2 {
		t.Errorf("the interceptor saw %d calls and the stats handler %d attempts, want 1 and 2", rec.calls, len(rec.attempts))
	}
	for i, got := range rec.attempts {
		if !rec.routed[i] || got != want {
			t.Errorf("attempt %d: RoutingOf = %+v, %v; want %+v", i+1, got, rec.routed[i], want)
		}
	}
	rec.mu.Unlock()

	// An RPC that no route matches: routed, to no route and no cluster.
	rec.reset()
	if err := conn.Invoke(ctx, "/none.S/M", &emptypb.Empty{}, &emptypb.Empty{}); status.Code(err) != codes.Unavailable {
		t.Fatalf("RPC without a route: %v, want UNAVAILABLE", err)
	}
	rec.mu.Lock()
	if len(rec.attempts) != 1 || !rec.routed[0] || rec.attempts[0].RouteIndex != -1 || rec.attempts[0].Cluster != "" || rec.attempts[0].Leaf != "" || rec.attempts[0].VirtualHost != "R-vh" {
		t.Errorf("RPC without a route: RoutingOf = %+v, %v; want routed to no route in R-vh", rec.attempts, rec.routed)
	}
	rec.mu.Unlock()

	if err := conn.Invoke(ctx, "/aborted.S/M", &emptypb.Empty{}, &emptypb.Empty{}); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("RPC with an abort: %v, want RESOURCE_EXHAUSTED", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.retries) != 1 || len(h.faults) != 1 {
		t.Fatalf("%d retries and %d faults reported, want 1 and 1", len(h.retries), len(h.faults))
	}
	if h.retries[0].Context.Value(tagKey{}) != "mine" || h.faults[0].Context.Value(tagKey{}) != "mine" {
		t.Error("the Retried and FaultInjected hooks did not get the RPC's context")
	}
}

// TestRoutingOfWithoutDecision: a context that no xdslens RPC carries has
// no routing.
func TestRoutingOfWithoutDecision(t *testing.T) {
	if r, ok := xdsgrpc.RoutingOf(context.Background()); ok {
		t.Errorf("RoutingOf(Background) = %+v, true", r)
	}
	var info xdsgrpc.CallInfo
	if r, ok := xdsgrpc.RoutingOf(xdsgrpc.WithCallInfo(context.Background(), &info)); ok {
		t.Errorf("RoutingOf of an RPC not started = %+v, true", r)
	}
}
