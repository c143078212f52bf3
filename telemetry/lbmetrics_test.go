package telemetry_test

import (
	"context"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	cswrrv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	wrrlocalityv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslens/xdslens/internal/backends"
	"github.com/xdslens/xdslens/internal/controlplane"
	"github.com/xdslens/xdslens/internal/rpctest"
	"github.com/xdslens/xdslens/internal/xdstest"
	"github.com/xdslens/xdslens/telemetry"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// TestLBMetrics routes RPCs to a weighted_round_robin cluster whose
// backends report their load: the data plane records gRPC's
// grpc.lb.wrr.endpoint_weights histogram and pick_first's successful
// connection attempts, labelled with the target, the cluster
// (grpc.lb.backend_service) and the locality (grpc.lb.locality).
func TestLBMetrics(t *testing.T) {
	ctx := xdstest.Context(t)
	var bs []*backends.Backend
	for _, u := range []float64{0.2, 0.8} {
		b, err := backends.Start()
		if err != nil {
			t.Fatal(err)
		}
		defer b.Stop()
		b.ReportLoad(u, 100)
		bs = append(bs, b)
	}
	cp, err := controlplane.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	w, _ := anypb.New(&cswrrv3.ClientSideWeightedRoundRobin{BlackoutPeriod: durationpb.New(0), WeightUpdatePeriod: durationpb.New(100 * time.Millisecond)})
	policy := &wrrlocalityv3.WrrLocality{EndpointPickingPolicy: &clusterv3.LoadBalancingPolicy{Policies: []*clusterv3.LoadBalancingPolicy_Policy{
		{TypedExtensionConfig: &corev3.TypedExtensionConfig{Name: "wrr", TypedConfig: w}},
	}}}
	if err := cp.SetResources(ctx, testNodeID, "1", controlplane.Listener("svc", "svc-route"),
		controlplane.RouteConfig("svc-route", []string{"*"}, "c"),
		rpctest.WithLBPolicy(controlplane.Cluster("c", ""), policy),
		rpctest.LocalityEndpoints("c", rpctest.Locality{Zone: "z1", Weight: 1, Addrs: []string{bs[0].Addr(), bs[1].Addr()}})); err != nil {
		t.Fatal(err)
	}
	pool := xdsclient.NewPool(bootstrapFor(cp.Addr()).Parse(t), xdstest.ClientOptions()...)
	b := xdsgrpc.NewBuilder(pool)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	dp, err := telemetry.NewDataPlane(b, telemetry.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Close()
	conn, err := grpc.NewClient("xdslens:///svc", append(b.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := testgrpc.NewTestServiceClient(conn)
	locality := `{region="r", zone="z1", sub_zone=""}`
	want := lbl("grpc.lb.backend_service", "c", "grpc.lb.locality", locality, "grpc.target", "xdslens:///svc")
	for {
		if _, err := client.EmptyCall(ctx, &testgrpc.Empty{}, grpc.WaitForReady(true)); err != nil {
			t.Fatal(err)
		}
		rm := collect(t, reader)
		weights, ok := find(rm, telemetry.MetricWRREndpointWeights)
		var seen bool
		if ok {
			for _, p := range weights.Data.(metricdata.Histogram[float64]).DataPoints {
				if max, ok := p.Max.Value(); labels(p.Attributes) == want && p.Count > 0 && ok && max > 0 {
					seen = true
				}
			}
		}
		if seen {
			got := series(rm, telemetry.MetricPickFirstConnectionAttemptsSucceeded)
			if got[want] < 2 {
				t.Errorf("%s = %s, want 2 attempts at least for %s", telemetry.MetricPickFirstConnectionAttemptsSucceeded, show(got), want)
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("no positive %s with labels %s", telemetry.MetricWRREndpointWeights, want)
		}
	}
}
