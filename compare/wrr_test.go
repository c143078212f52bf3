package compare_test

import (
	"context"
	"fmt"
	"math"
	"net"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	cswrrv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	roundrobinv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	wrrlocalityv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/orca"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

// orcaBackend answers TestService RPCs with a per-call ORCA report of a
// fixed CPU utilization and request rate (gRFC A51), as a loaded backend
// would.
type orcaBackend struct {
	testgrpc.UnimplementedTestServiceServer
	utilization float64
	addr        string
}

func (b *orcaBackend) EmptyCall(ctx context.Context, _ *testgrpc.Empty) (*testgrpc.Empty, error) {
	rec := orca.CallMetricsRecorderFromContext(ctx)
	rec.SetCPUUtilization(b.utilization)
	rec.SetQPS(100)
	return &testgrpc.Empty{}, nil
}

func startORCABackend(t *testing.T, utilization float64) *orcaBackend {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &orcaBackend{utilization: utilization, addr: lis.Addr().String()}
	srv := grpc.NewServer(orca.CallMetricsServerOption(nil))
	testgrpc.RegisterTestServiceServer(srv, b)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return b
}

// wrrPolicy is client_side_weighted_round_robin (gRFC A58) under
// wrr_locality, with a blackout of 100ms and weights updated every 100ms,
// so that the backends' reports are used within a second. (A blackout of
// 0 would not do for the comparison: grpc-go drops an explicit 0 when it
// converts the resource, and applies the 10s default; xdslens, like gRPC
// C-core, takes 0 as no blackout.)
func wrrPolicy(t *testing.T) *wrrlocalityv3.WrrLocality {
	t.Helper()
	w, err := anypb.New(&cswrrv3.ClientSideWeightedRoundRobin{
		BlackoutPeriod:     durationpb.New(100 * time.Millisecond),
		WeightUpdatePeriod: durationpb.New(100 * time.Millisecond),
	})
	if err != nil {
		t.Fatal(err)
	}
	rr, _ := anypb.New(&roundrobinv3.RoundRobin{})
	return &wrrlocalityv3.WrrLocality{EndpointPickingPolicy: &clusterv3.LoadBalancingPolicy{Policies: []*clusterv3.LoadBalancingPolicy_Policy{
		{TypedExtensionConfig: &corev3.TypedExtensionConfig{Name: "wrr", TypedConfig: w}},
		{TypedExtensionConfig: &corev3.TypedExtensionConfig{Name: "rr", TypedConfig: rr}},
	}}}
}

// TestSideBySideWeightedRoundRobin has three backends report CPU
// utilizations of 0.2, 0.4 and 0.8 at the same request rate: on both
// channels traffic settles at shares of 4/7, 2/7 and 1/7 (weights are the
// rate over the utilization), within 5 points each.
func TestSideBySideWeightedRoundRobin(t *testing.T) {
	s := newSideBySide(t, 0)
	e := s.e
	bs := []*orcaBackend{startORCABackend(t, 0.2), startORCABackend(t, 0.4), startORCABackend(t, 0.8)}
	want := map[string]float64{bs[0].addr: 4.0 / 7, bs[1].addr: 2.0 / 7, bs[2].addr: 1.0 / 7}
	e.Set(controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("c"))),
		rpctest.WithLBPolicy(controlplane.Cluster("c", ""), wrrPolicy(t)),
		controlplane.Endpoints("c", bs[0].addr, bs[1].addr, bs[2].addr))
	ctx := xdstest.Context(t)
	const n = 700
	for name, conn := range s.channels() {
		var last string
		settled := false
		for !settled && ctx.Err() == nil {
			settled = func() bool {
				got := map[string]int{}
				for range n {
					o := rpctest.Call(ctx, conn, "/grpc.testing.TestService/EmptyCall")
					if o.Err != nil {
						last = o.Err.Error()
						return false
					}
					got[o.Backend]++
				}
				last = fmt.Sprint(got)
				for addr, share := range want {
					if math.Abs(float64(got[addr])/n-share) > 0.05 {
						return false
					}
				}
				return true
			}()
		}
		if !settled {
			t.Errorf("%s: traffic never settled at 4/7, 2/7, 1/7 of %d RPCs for %v: last %s", name, n, []string{bs[0].addr, bs[1].addr, bs[2].addr}, last)
		}
	}
}
