package compare_test

import (
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
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/lrsserver"
	"github.com/xdslens/xdslens/xdsclient"
)

// grpcGoUserAgent is the user_agent_name of the node grpc-go's xDS client
// sends (internal/xds/bootstrap in v1.85.0).
const grpcGoUserAgent = "gRPC Go"

// load is what the load reports of one client said of one cluster.
type load struct{ issued, succeeded, failed uint64 }

// loadsByClient sums the load reported for cluster by each client, by
// the user_agent_name of the node of its LRS streams.
func loadsByClient(svc *lrsserver.Service, cluster string) map[string]load {
	nodes := svc.Nodes()
	out := map[string]load{}
	for _, r := range svc.Reports() {
		agent := nodes[r.Stream-1].GetUserAgentName()
		l := out[agent]
		for _, cs := range r.Stats {
			if cs.GetClusterName() != cluster {
				continue
			}
			for _, ls := range cs.GetUpstreamLocalityStats() {
				l.issued += ls.GetTotalIssuedRequests()
				l.succeeded += ls.GetTotalSuccessfulRequests()
				l.failed += ls.GetTotalErrorRequests()
			}
		}
		out[agent] = l
	}
	return out
}

// TestSideBySideLoadReportAnsweredFirst sends, on both channels, RPCs of
// a method the backend does not serve, whose Trailers-Only answer closes
// the stream before the client has written the request
// (rpctest.AnswerFirst makes that race certain): gRPC-Go v1.85.0 ends
// those attempts without their status, as if they had succeeded. A
// deliberate difference: xdslens's load reports count them as the
// failures they are (its interceptors learn the RPC's status, as gRPC
// C-core reports the status to its policies); grpc-go's count them as
// successes.
func TestSideBySideLoadReportAnsweredFirst(t *testing.T) {
	ctx := xdstest.Context(t)
	svc := lrsserver.NewService(lrsserver.Config{Interval: 20 * time.Millisecond, SendAll: true})
	e := rpctest.NewEnvWith(t, 1, []controlplane.Option{controlplane.WithService(svc.Register)})
	// One backend: the barrier RPCs of AnswerFirst go to cluster c too,
	// on the connection of the held attempt (grpc-go's channel connects
	// once per cluster).
	e.Set(controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("c"))),
		controlplane.ClusterWithLoadReporting("c", ""), controlplane.Endpoints("c", e.Addr(0)))
	holds := map[string]*rpctest.AnswerFirst{xdsclient.UserAgentName: rpctest.NewAnswerFirst(ctx), grpcGoUserAgent: rpctest.NewAnswerFirst(ctx)}
	conns := map[string]*grpc.ClientConn{
		xdsclient.UserAgentName: e.Dial("xdslens:///svc", grpc.WithStatsHandler(holds[xdsclient.UserAgentName])),
		grpcGoUserAgent:         dialGRPC(e, "xds:///svc", grpc.WithStatsHandler(holds[grpcGoUserAgent])),
	}
	const n = 3
	for agent, conn := range conns {
		hold := holds[agent]
		hold.SetConn(conn)
		if _, err := testgrpc.NewTestServiceClient(conn).EmptyCall(ctx, &testpb.Empty{}, grpc.WaitForReady(true)); err != nil {
			t.Fatalf("%s: %v", agent, err)
		}
		for i := range n {
			hold.Arm("/pkg.S/M")
			if err := conn.Invoke(ctx, "/pkg.S/M", &emptypb.Empty{}, &emptypb.Empty{}); status.Code(err) != codes.Unimplemented {
				t.Fatalf("%s: RPC %d of an unknown method: %v, want UNIMPLEMENTED", agent, i, err)
			}
			hold.Check(t)
		}
	}
	// Each channel made 1 + 2n RPCs of cluster c: one that succeeded, n
	// held ones that failed, and n barriers (failed, unless one met the
	// same race unheld, which only grpc-go would count a success).
	const issued = 1 + 2*n
	if err := svc.Wait(ctx, func() bool {
		for agent := range conns {
			l := loadsByClient(svc, "c")[agent]
			if l.issued != issued || l.succeeded+l.failed != issued {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatalf("the load reports of both clients never counted %d finished RPCs: %v (%v)", issued, loadsByClient(svc, "c"), err)
	}
	got := loadsByClient(svc, "c")
	if l := got[xdsclient.UserAgentName]; l.succeeded != 1 || l.failed != 2*n {
		t.Errorf("xdslens: load reports count %d succeeded, %d failed; want 1 and %d: the held RPCs failed", l.succeeded, l.failed, 2*n)
	}
	// If grpc-go comes to count them as failures, this difference is gone.
	if l := got[grpcGoUserAgent]; l.succeeded < 1+n || l.failed > n {
		t.Errorf("grpc-go: load reports count %d succeeded, %d failed; want %d succeeded at least (the held RPCs, as gRPC-Go ended them), %d failed at most (if grpc-go now counts them failed, this difference is gone)", l.succeeded, l.failed, 1+n, n)
	}
}
