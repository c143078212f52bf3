package xdsgrpc_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/lrsserver"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// The tests of this file make certain a race that gRPC-Go v1.85.0 loses
// rarely: a Trailers-Only answer that closes a stream before the client
// writes its request ends the attempt without a status, as for success
// (rpctest.AnswerFirst). On a channel with DialOptions' interceptors, the
// cluster's policy counts such an attempt with the status the RPC or its
// retry tells.

// callEnds records the CallFinished and Ejection hooks.
type callEnds struct {
	mu        sync.Mutex
	errs      map[string][]codes.Code // by cluster
	ejections []xdsgrpc.EjectionInfo
	ejected   chan struct{} // closed at the first ejection
}

func newCallEnds() *callEnds {
	return &callEnds{errs: map[string][]codes.Code{}, ejected: make(chan struct{})}
}

func (h *callEnds) hooks() *xdsgrpc.Hooks {
	return &xdsgrpc.Hooks{
		CallFinished: func(i xdsgrpc.CallEndInfo) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.errs[i.Cluster] = append(h.errs[i.Cluster], status.Code(i.Err))
		},
		Ejection: func(i xdsgrpc.EjectionInfo) {
			h.mu.Lock()
			defer h.mu.Unlock()
			if i.Ejected && len(h.ejections) == 0 {
				close(h.ejected)
			}
			h.ejections = append(h.ejections, i)
		},
	}
}

// failed counts the CallFinished calls of cluster with an error.
func (h *callEnds) failed(cluster string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.errs[cluster] {
		if c != codes.OK {
			n++
		}
	}
	return n
}

// TestOutlierDetectionAnsweredFirst: a backend that fails every RPC with
// a Trailers-Only answer before the client has written its request, which
// gRPC-Go ends as if it had succeeded, is ejected by failure percentage
// outlier detection (gRFC A50: more than 50% failed), and the
// CallFinished hook reports each of those RPCs failed.
func TestOutlierDetectionAnsweredFirst(t *testing.T) {
	h := newCallEnds()
	e := rpctest.NewEnv(t, 3, xdsgrpc.WithHooks(h.hooks()))
	const interval = 200 * time.Millisecond
	e.Set(controlplane.Listener("L", "R"),
		rpctest.RouteConfig("R",
			rpctest.Route(rpctest.PrefixMatch("/barrier."), rpctest.ToCluster("barrier")),
			rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("c"))),
		controlplane.WithOutlierDetection(controlplane.Cluster("c", ""), interval, time.Hour),
		controlplane.Endpoints("c", e.Addr(0), e.Addr(1), e.Addr(2)),
		// The barrier's cluster shares the connection to backend 0.
		controlplane.Cluster("barrier", ""), controlplane.Endpoints("barrier", e.Addr(0)))
	ctx := xdstest.Context(t)
	hold := rpctest.NewAnswerFirst(ctx)
	conn := e.Dial("xdslens:///L", grpc.WithStatsHandler(hold))
	hold.SetConn(conn)
	if err := conn.Invoke(ctx, rpctest.BarrierMethod, &emptypb.Empty{}, &emptypb.Empty{}, grpc.WaitForReady(true)); status.Code(err) != codes.Unimplemented {
		t.Fatalf("barrier RPC: %v, want UNIMPLEMENTED", err)
	}
	for _, b := range e.Backends {
		for b.Calls() == 0 {
			if err := rpctest.ClientStreamCall(ctx, conn); err != nil {
				t.Fatalf("before any failure: %v", err)
			}
		}
	}
	e.Backends[0].Fail(backends.Failure{Every: 1})
	hold.ArmTo(e.Addr(0))
	// The first interval in which each backend has 5 RPCs ejects backend
	// 0, if its failures count. Give up after 5 intervals and 50 RPCs to
	// it, whichever is later.
	start := time.Now()
	ejected := false
	for !ejected && (hold.Held() < 50 || time.Since(start) < 5*interval) {
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		err := rpctest.ClientStreamCall(ctx, conn)
		if err != nil && status.Code(err) != codes.Unavailable {
			t.Fatalf("RPC: %v; want OK or UNAVAILABLE", err)
		}
		select {
		case <-h.ejected:
			ejected = true
		default:
		}
	}
	hold.Check(t)
	if got, held := h.failed("c"), hold.Held(); got != held {
		t.Errorf("CallFinished reported %d RPCs of cluster c failed, want the %d held ones that backend 0 failed", got, held)
	}
	if !ejected {
		t.Fatalf("backend 0 was not ejected after %d RPCs that it failed, over %v", hold.Held(), time.Since(start).Round(time.Millisecond))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if i := h.ejections[0]; i.Address != e.Addr(0) || i.Algorithm != "failure_percentage" || i.Failures < 5 || i.Failures <= i.Successes {
		t.Errorf("first ejection %+v; want backend 0 (%s) by failure_percentage, with 5 failures at least, most of its RPCs", i, e.Addr(0))
	}
}

// loadOf sums the load reported for cluster: requests issued, succeeded
// and failed.
func loadOf(reports []lrsserver.Report, cluster string) (issued, succeeded, failed uint64) {
	for _, r := range reports {
		for _, cs := range r.Stats {
			if cs.GetClusterName() != cluster {
				continue
			}
			for _, ls := range cs.GetUpstreamLocalityStats() {
				issued += ls.GetTotalIssuedRequests()
				succeeded += ls.GetTotalSuccessfulRequests()
				failed += ls.GetTotalErrorRequests()
			}
		}
	}
	return issued, succeeded, failed
}

// TestLoadReportAnsweredFirst: the load reports of a cluster count as
// errors the RPCs that a backend failed with a Trailers-Only answer
// before the client wrote its request, which gRPC-Go ends as if they had
// succeeded: the attempt of an unknown method, and the first attempt of
// an RPC that its route retried; and they count as successes the retry
// that succeeded and a server-streaming RPC that ends well with no
// response. The CallFinished hook reports each attempt with its status.
func TestLoadReportAnsweredFirst(t *testing.T) {
	ctx := xdstest.Context(t)
	svc := lrsserver.NewService(lrsserver.Config{Interval: 20 * time.Millisecond, SendAll: true})
	h := newCallEnds()
	e := rpctest.NewEnvWith(t, 1, []controlplane.Option{controlplane.WithService(svc.Register)}, xdsgrpc.WithHooks(h.hooks()))
	e.Set(controlplane.Listener("L", "R"),
		rpctest.RouteConfig("R",
			rpctest.Route(rpctest.PrefixMatch("/barrier."), rpctest.ToCluster("barrier")),
			rpctest.Route(rpctest.PrefixMatch("/grpc.testing."), controlplane.WithRetry(rpctest.ToCluster("c"), "unavailable", 2, time.Millisecond, time.Millisecond)),
			rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("c"))),
		controlplane.ClusterWithLoadReporting("c", ""), controlplane.Endpoints("c", e.Addr(0)),
		controlplane.Cluster("barrier", ""), controlplane.Endpoints("barrier", e.Addr(0)))
	hold := rpctest.NewAnswerFirst(ctx)
	conn := e.Dial("xdslens:///L", grpc.WithStatsHandler(hold))
	hold.SetConn(conn)
	client := testgrpc.NewTestServiceClient(conn)
	if _, err := client.EmptyCall(ctx, &testpb.Empty{}, grpc.WaitForReady(true)); err != nil {
		t.Fatal(err)
	}
	var issued, succeeded, failed uint64 = 1, 1, 0
	for i := range 3 {
		hold.Arm("/pkg.S/M")
		err := conn.Invoke(ctx, "/pkg.S/M", &emptypb.Empty{}, &emptypb.Empty{})
		if status.Code(err) != codes.Unimplemented {
			t.Fatalf("RPC %d of an unknown method: %v, want UNIMPLEMENTED", i, err)
		}
		hold.Check(t)
		issued, failed = issued+1, failed+1
	}
	e.Backends[0].Fail(backends.Failure{Every: 2}) // the first attempt fails, before reading; the retry succeeds
	hold.Arm("/grpc.testing.TestService/StreamingInputCall")
	if err := rpctest.ClientStreamCall(ctx, conn); err != nil {
		t.Fatalf("retried client-streaming RPC: %v", err)
	}
	hold.Check(t)
	e.Backends[0].Fail(backends.Failure{})
	issued, succeeded, failed = issued+2, succeeded+1, failed+1
	if err := rpctest.EmptyServerStreamCall(ctx, conn); err != nil {
		t.Fatalf("server-streaming RPC with no response: %v", err)
	}
	issued, succeeded = issued+1, succeeded+1

	err := svc.Wait(ctx, func() bool {
		i, s, f := loadOf(svc.Reports(), "c")
		return i == issued && s+f == issued
	})
	i, s, f := loadOf(svc.Reports(), "c")
	if err != nil || s != succeeded || f != failed {
		t.Errorf("load of cluster c: %d issued, %d succeeded, %d failed; want %d, %d, %d (%v)", i, s, f, issued, succeeded, failed, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	want := []codes.Code{codes.OK, codes.Unimplemented, codes.Unimplemented, codes.Unimplemented, codes.Unavailable, codes.OK, codes.OK}
	if !slices.Equal(h.errs["c"], want) {
		t.Errorf("CallFinished of cluster c: %v, want %v", h.errs["c"], want)
	}
}
