package xdsgrpc_test

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// resilienceHooks records the Retried and FaultInjected hooks.
type resilienceHooks struct {
	mu      sync.Mutex
	retries []xdsgrpc.RetryInfo
	faults  []xdsgrpc.FaultInfo
}

func (h *resilienceHooks) hooks() *xdsgrpc.Hooks {
	return &xdsgrpc.Hooks{
		Retried:       func(i xdsgrpc.RetryInfo) { h.mu.Lock(); h.retries = append(h.retries, i); h.mu.Unlock() },
		FaultInjected: func(i xdsgrpc.FaultInfo) { h.mu.Lock(); h.faults = append(h.faults, i); h.mu.Unlock() },
	}
}

// dialServing dials xdslens:///L in e and waits until an RPC succeeds on
// it; it returns the channel and the test's context.
func dialServing(t *testing.T, e *rpctest.Env) (*grpc.ClientConn, context.Context) {
	t.Helper()
	conn := e.Dial("xdslens:///L")
	ctx := xdstest.Context(t)
	if !rpctest.Poll(ctx, func(ctx context.Context) bool {
		return rpctest.Call(ctx, conn, "/grpc.testing.TestService/EmptyCall").Err == nil
	}) {
		t.Fatal("no RPC succeeded")
	}
	return conn, ctx
}

// TestRetriesReported retries a unary RPC that fails once: it succeeds on
// its second attempt, its CallInfo says so, and the Retried hook names the
// cluster, the attempt and the code.
func TestRetriesReported(t *testing.T) {
	var h resilienceHooks
	e := rpctest.NewEnv(t, 1, xdsgrpc.WithHooks(h.hooks()))
	e.Set(controlplane.Listener("L", "R"),
		rpctest.RouteConfig("R", rpctest.Route(rpctest.PrefixMatch(""), controlplane.WithRetry(rpctest.ToCluster("c"), "unavailable", 2, time.Millisecond, 5*time.Millisecond))),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.Addr(0)))
	conn, ctx := dialServing(t, e)
	e.Backends[0].Fail(backends.Failure{Every: 2})
	var info xdsgrpc.CallInfo
	if err := conn.Invoke(xdsgrpc.WithCallInfo(ctx, &info), "/grpc.testing.TestService/EmptyCall", &emptypb.Empty{}, &emptypb.Empty{}); err != nil {
		t.Fatal(err)
	}
	if info.Attempts() != 2 {
		t.Errorf("CallInfo.Attempts() = %d, want 2", info.Attempts())
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.retries) != 1 || h.retries[0].Attempt != 2 || h.retries[0].Code != codes.Unavailable || h.retries[0].Cluster != "c" {
		t.Errorf("Retried hook calls %+v, want one for attempt 2 after UNAVAILABLE in cluster c", h.retries)
	}
}

// TestStreamRetried retries a server-streaming RPC whose first attempt
// fails before any response: the retry gets the request again and the
// stream's messages come.
func TestStreamRetried(t *testing.T) {
	e := rpctest.NewEnv(t, 1)
	e.Set(controlplane.Listener("L", "R"),
		rpctest.RouteConfig("R", rpctest.Route(rpctest.PrefixMatch(""), controlplane.WithRetry(rpctest.ToCluster("c"), "unavailable", 2, time.Millisecond, 5*time.Millisecond))),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.Addr(0)))
	conn, ctx := dialServing(t, e)
	e.Backends[0].Fail(backends.Failure{Every: 2})
	s, err := testgrpc.NewTestServiceClient(conn).StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{
		ResponseParameters: []*testgrpc.ResponseParameters{{Size: 1}, {Size: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		_, err := s.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d messages: %v", n, err)
		}
		n++
	}
	if n != 2 {
		t.Errorf("%d messages, want 2", n)
	}
}

// TestFaultReported aborts RPCs with the fault filter: the RPC fails with
// the fault's code, its CallInfo says "abort", and the FaultInjected hook
// names the filter.
func TestFaultReported(t *testing.T) {
	var h resilienceHooks
	e := rpctest.NewEnv(t, 1, xdsgrpc.WithHooks(h.hooks()))
	e.Set(controlplane.ListenerWithFault("L", "R", controlplane.FaultAbort(uint32(codes.ResourceExhausted), 100), 0),
		rpctest.RouteConfig("R", rpctest.Route(rpctest.PrefixMatch(""), rpctest.ToCluster("c"))),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.Addr(0)))
	conn := e.Dial("xdslens:///L")
	ctx := xdstest.Context(t)
	var info xdsgrpc.CallInfo
	if !rpctest.Poll(ctx, func(ctx context.Context) bool {
		info = xdsgrpc.CallInfo{}
		err := conn.Invoke(xdsgrpc.WithCallInfo(ctx, &info), "/pkg.S/M", &emptypb.Empty{}, &emptypb.Empty{})
		return status.Code(err) == codes.ResourceExhausted
	}) {
		t.Fatal("no RPC was aborted")
	}
	if info.Fault() != "abort" || info.Cluster != "c" {
		t.Errorf("CallInfo: fault %q, cluster %q; want abort in c", info.Fault(), info.Cluster)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.faults) == 0 || h.faults[0].Action != "abort" || h.faults[0].Filter != controlplane.FaultFilterName {
		t.Errorf("FaultInjected hook calls %+v, want an abort by %s", h.faults, controlplane.FaultFilterName)
	}
}

// TestDisabledOverrideApplies: a route's filter override wrapped in a
// FilterConfig marked disabled applies its config, as in gRPC C-core
// (and grpc-go without its experimental ext_proc and ext_authz
// switches), which do not read disabled: the listener's fault filter
// aborts nothing, the disabled override of one route aborts every RPC.
func TestDisabledOverrideApplies(t *testing.T) {
	e := rpctest.NewEnv(t, 1)
	e.Set(controlplane.ListenerWithFault("L", "R", controlplane.FaultAbort(uint32(codes.Unavailable), 0), 0),
		rpctest.RouteConfig("R",
			controlplane.WithDisabledFaultOverride(rpctest.Route(rpctest.PathMatch("/pkg.S/Disabled"), rpctest.ToCluster("c")), controlplane.FaultAbort(uint32(codes.ResourceExhausted), 100)),
			rpctest.Route(rpctest.PrefixMatch(""), rpctest.ToCluster("c"))),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.Addr(0)))
	conn, ctx := dialServing(t, e)
	for range 5 {
		var info xdsgrpc.CallInfo
		err := conn.Invoke(xdsgrpc.WithCallInfo(ctx, &info), "/pkg.S/Disabled", &emptypb.Empty{}, &emptypb.Empty{})
		if status.Code(err) != codes.ResourceExhausted || info.Fault() != "abort" {
			t.Fatalf("RPC on the route whose override is disabled: %v, fault %q; want RESOURCE_EXHAUSTED by an abort", err, info.Fault())
		}
	}
}

// TestPlanNeedsDialOptions routes RPCs on a channel dialled with the
// resolver alone: a route with a retry_policy fails its RPCs UNAVAILABLE
// with a message that says to dial with DialOptions, rather than send
// them without retries, while a plain route serves.
func TestPlanNeedsDialOptions(t *testing.T) {
	e := rpctest.NewEnv(t, 1)
	e.Set(controlplane.Listener("L", "R"),
		rpctest.RouteConfig("R",
			rpctest.Route(rpctest.PrefixMatch("/retried."), controlplane.WithRetry(rpctest.ToCluster("c"), "unavailable", 2, time.Millisecond, time.Millisecond)),
			rpctest.Route(rpctest.PrefixMatch(""), rpctest.ToCluster("c"))),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.Addr(0)))
	conn, err := grpc.NewClient("xdslens:///L", grpc.WithResolvers(e.Builder), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := xdstest.Context(t)
	if !rpctest.Poll(ctx, func(ctx context.Context) bool { return rpctest.Call(ctx, conn, "/plain.S/M").Err == nil }) {
		t.Fatal("the plain route never served")
	}
	err = conn.Invoke(ctx, "/retried.S/M", &emptypb.Empty{}, &emptypb.Empty{})
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "xdsgrpc.DialOptions") || !strings.Contains(err.Error(), "retry_policy") {
		t.Errorf("RPC of a route with a retry_policy, without the interceptors: %v; want UNAVAILABLE saying to dial with DialOptions", err)
	}
}
