package xdsgrpc_test

import (
	"context"
	"math"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// TestRetryBackoffLimit checks the schedule of gRFC A44 (base * 2^(n-1),
// at most max) where the doubling would pass the largest time.Duration:
// the wait is max, never a shorter wait that the wrapped product left.
func TestRetryBackoffLimit(t *testing.T) {
	const huge = time.Duration(math.MaxInt64)
	for _, tc := range []struct {
		base, max time.Duration
		n         int
		want      time.Duration
	}{
		{25 * time.Millisecond, 250 * time.Millisecond, 1, 25 * time.Millisecond},
		{25 * time.Millisecond, 250 * time.Millisecond, 2, 50 * time.Millisecond},
		{25 * time.Millisecond, 250 * time.Millisecond, 4, 200 * time.Millisecond},
		{25 * time.Millisecond, 250 * time.Millisecond, 5, 250 * time.Millisecond},
		{time.Second, 100 * time.Millisecond, 1, 100 * time.Millisecond},
		// 5 * 2^59 ns shifted by 3 is 5 * 2^62 ns, which wraps to 2^62.
		{5 << 59, huge, 4, huge},
		// 3 * 2^61 ns doubled is negative when it wraps.
		{3 << 61, huge, 2, huge},
		{huge, huge, 5, huge},
		{huge / 4, huge, 3, huge / 4 * 4},
	} {
		if got := xdsgrpc.RetryBackoffLimit(tc.base, tc.max, tc.n); got != tc.want {
			t.Errorf("backoff limit of attempt %d from %v to %v = %v, want %v", tc.n, tc.base, tc.max, got, tc.want)
		}
	}
}

// TestDeadlineDuringRetryBackoff: an RPC whose deadline passes while it
// waits to retry ends with DEADLINE_EXCEEDED, as in gRPC, not with the
// status of the attempt before, for a unary and a streaming RPC. The
// backoff here is of decades: a base_interval whose default max_interval,
// ten times it, passes the largest duration.
func TestDeadlineDuringRetryBackoff(t *testing.T) {
	e := rpctest.NewEnv(t, 1)
	action := controlplane.WithRetry(rpctest.ToCluster("c"), "unavailable", 4, time.Millisecond, time.Millisecond)
	action.RetryPolicy.RetryBackOff = &routev3.RetryPolicy_RetryBackOff{BaseInterval: &durationpb.Duration{Seconds: 1_000_000_000}}
	e.Set(controlplane.Listener("L", "R"),
		rpctest.RouteConfig("R", rpctest.Route(rpctest.PrefixMatch(""), action)),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.Addr(0)))
	conn, ctx := dialServing(t, e)
	e.Backends[0].Fail(backends.Failure{Every: 1})
	const timeout = 200 * time.Millisecond

	unaryCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var info xdsgrpc.CallInfo
	err := conn.Invoke(xdsgrpc.WithCallInfo(unaryCtx, &info), "/grpc.testing.TestService/EmptyCall", &emptypb.Empty{}, &emptypb.Empty{})
	if status.Code(err) != codes.DeadlineExceeded || info.Attempts() != 1 {
		t.Errorf("unary RPC: %v after %d attempts, want DEADLINE_EXCEEDED after 1, in the backoff", err, info.Attempts())
	}

	streamCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s, err := testgrpc.NewTestServiceClient(conn).StreamingOutputCall(streamCtx, &testgrpc.StreamingOutputCallRequest{})
	if err == nil {
		_, err = s.Recv()
	}
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("streaming RPC: %v, want DEADLINE_EXCEEDED, in the backoff", err)
	}
}
