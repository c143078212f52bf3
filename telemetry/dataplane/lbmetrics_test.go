package dataplane_test

import (
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	cswrrv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	wrrlocalityv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslens/xdslens/internal/testing/metrictest"
	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/telemetry/dataplane"
)

// TestLBMetrics routes RPCs to a weighted_round_robin cluster whose
// backends report their load: the data plane records gRPC's
// grpc.lb.wrr.endpoint_weights histogram and pick_first's successful
// connection attempts, labelled with the target, the cluster
// (grpc.lb.backend_service) and the locality (grpc.lb.locality).
func TestLBMetrics(t *testing.T) {
	ctx := xdstest.Context(t)
	e := rpctest.NewEnv(t, 2)
	for i, u := range []float64{0.2, 0.8} {
		e.Backends[i].ReportLoad(u, 100)
	}
	w, _ := anypb.New(&cswrrv3.ClientSideWeightedRoundRobin{BlackoutPeriod: durationpb.New(0), WeightUpdatePeriod: durationpb.New(100 * time.Millisecond)})
	policy := &wrrlocalityv3.WrrLocality{EndpointPickingPolicy: &clusterv3.LoadBalancingPolicy{Policies: []*clusterv3.LoadBalancingPolicy_Policy{
		{TypedExtensionConfig: &corev3.TypedExtensionConfig{Name: "wrr", TypedConfig: w}},
	}}}
	e.Set(controlplane.Listener("svc", "svc-route"),
		controlplane.RouteConfig("svc-route", []string{"*"}, "c"),
		rpctest.WithLBPolicy(controlplane.Cluster("c", ""), policy),
		rpctest.LocalityEndpoints("c", rpctest.Locality{Zone: "z1", Weight: 1, Addrs: []string{e.Addr(0), e.Addr(1)}}))
	reader := measure(t, e.Builder)
	conn := e.Dial("xdslens:///svc")
	client := testgrpc.NewTestServiceClient(conn)
	locality := `{region="r", zone="z1", sub_zone=""}`
	want := metrictest.Lbl("grpc.lb.backend_service", "c", "grpc.lb.locality", locality, "grpc.target", "xdslens:///svc", "xdslens.channel_target", "xdslens:///svc")
	for {
		if _, err := client.EmptyCall(ctx, &testgrpc.Empty{}, grpc.WaitForReady(true)); err != nil {
			t.Fatal(err)
		}
		rm := metrictest.Collect(t, reader)
		weights, ok := metrictest.Find(rm, dataplane.MetricWRREndpointWeights)
		var seen bool
		if ok {
			for _, p := range weights.Data.(metricdata.Histogram[float64]).DataPoints {
				if max, ok := p.Max.Value(); metrictest.Labels(p.Attributes) == want && p.Count > 0 && ok && max > 0 {
					seen = true
				}
			}
		}
		// Both endpoints connect, each on its own: the weight of one may
		// come before the other is connected.
		got := metrictest.Series(rm, dataplane.MetricPickFirstConnectionAttemptsSucceeded)
		if seen && got[want] >= 2 {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("positive %s with labels %s: %v; %s = %s, want 2 attempts at least",
				dataplane.MetricWRREndpointWeights, want, seen, dataplane.MetricPickFirstConnectionAttemptsSucceeded, metrictest.Show(got))
		}
	}
}
