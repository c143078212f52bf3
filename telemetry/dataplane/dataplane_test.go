package dataplane_test

import (
	"context"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/internal/testing/metrictest"
	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/telemetry/dataplane"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// sharedClient is the target under which the channels of
// TestDataPlaneMetrics get their xDS client (xdsgrpc.WithPoolTarget).
const sharedClient = "shared-client"

// TestDataPlaneMetrics sends RPCs through an xdslens channel whose Builder
// has WithMeterProvider and WithPoolTarget and reads the data-plane
// instruments, labelled with the xDS client's target and the channel's:
// picks by cluster and outcome (born at zero with
// the config for the clusters routes choose, not for the leaves of an
// aggregate cluster), calls by status, drops by category (born at zero with
// the config), config updates, and in-flight RPCs against max_requests.
func TestDataPlaneMetrics(t *testing.T) {
	ctx := xdstest.Context(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	e := rpctest.NewEnv(t, 1, dataplane.WithMeterProvider(mp), xdsgrpc.WithPoolTarget(sharedClient))
	back, b := e.Backends[0], e.Builder
	dropping := controlplane.Endpoints("dropping", back.Addr())
	dropping.Policy = &endpointv3.ClusterLoadAssignment_Policy{DropOverloads: []*endpointv3.ClusterLoadAssignment_Policy_DropOverload{{
		Category: "lb", DropPercentage: &typev3.FractionalPercent{Numerator: 100},
	}}}
	limited := controlplane.Cluster("c", "")
	limited.CircuitBreakers = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{MaxRequests: wrapperspb.UInt32(5)}}}
	rc := controlplane.RouteConfig("svc-route", []string{"*"}, "c")
	toCluster := func(path, cluster string) *routev3.Route {
		return &routev3.Route{
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: path}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster}}},
		}
	}
	rc.VirtualHosts[0].Routes = []*routev3.Route{
		toCluster("/grpc.testing.TestService/UnaryCall", "dropping"),
		toCluster("/grpc.testing.TestService/EmptyCall", "c"),
		toCluster("/grpc.testing.TestService/StreamingCall", "agg"),
	}
	e.Set(controlplane.Listener("svc", "svc-route"), rc,
		limited, controlplane.Endpoints("c", back.Addr()),
		controlplane.Cluster("dropping", ""), dropping,
		controlplane.AggregateCluster("agg", "leaf"), controlplane.Cluster("leaf", ""), controlplane.Endpoints("leaf", back.Addr()))

	defer b.AddHooks(&xdsgrpc.Hooks{
		ConfigChanged: func(xdsgrpc.ConfigInfo) { xdstest.Notify() },
		Picked:        func(xdsgrpc.PickInfo) { xdstest.Notify() },
		CallFinished:  func(xdsgrpc.CallEndInfo) { xdstest.Notify() },
	})()
	conn, err := grpc.NewClient("xdslens:///svc", grpc.WithResolvers(b), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := testgrpc.NewTestServiceClient(conn)

	// Every series of the channel has the xDS client's target, and those
	// of the channel itself its own target too; the circuit breakers, the
	// client's, have no channel.
	const target, channel = sharedClient, "xdslens:///svc"
	picks := func(cluster, outcome string) string {
		return metrictest.Lbl(dataplane.KeyTarget, target, dataplane.KeyChannelTarget, channel, dataplane.KeyBackendService, cluster, dataplane.KeyOutcome, outcome)
	}
	// The config creates the pick series at zero.
	conn.Connect()
	metrictest.WaitSeries(t, ctx, reader, dataplane.MetricConfigUpdates, map[string]float64{
		metrictest.Lbl(dataplane.KeyTarget, target, dataplane.KeyChannelTarget, channel, dataplane.KeyResult, "config"): 1,
		metrictest.Lbl(dataplane.KeyTarget, target, dataplane.KeyChannelTarget, channel, dataplane.KeyResult, "error"):  0,
	})
	zero := map[string]float64{}
	for _, c := range []string{"c", "dropping", "agg"} {
		for _, o := range []string{"sent", "dropped", "overloaded", "no_endpoint", "cluster_error"} {
			zero[picks(c, o)] = 0
		}
	}
	metrictest.WaitSeries(t, ctx, reader, dataplane.MetricPicks, zero)
	drops := metrictest.Lbl(dataplane.KeyTarget, target, dataplane.KeyChannelTarget, channel, dataplane.KeyLeafCluster, "dropping", dataplane.KeyCategory, "lb")
	metrictest.WaitSeries(t, ctx, reader, dataplane.MetricDrops, map[string]float64{drops: 0})

	if _, err := client.EmptyCall(ctx, &testpb.Empty{}, grpc.WaitForReady(true)); err != nil {
		t.Fatal(err)
	}
	if _, err := client.UnaryCall(ctx, &testpb.SimpleRequest{}); err == nil {
		t.Fatal("an RPC to the dropping cluster succeeded")
	}
	if err := conn.Invoke(ctx, "/other.Svc/M", &testpb.Empty{}, &testpb.Empty{}); err == nil {
		t.Fatal("an RPC no route matches succeeded")
	}
	want := zero
	want[picks("c", "sent")] = 1
	want[picks("dropping", "dropped")] = 1
	want[picks("", "no_route")] = 1
	metrictest.WaitSeries(t, ctx, reader, dataplane.MetricPicks, want)
	metrictest.WaitSeries(t, ctx, reader, dataplane.MetricCalls, map[string]float64{
		metrictest.Lbl(dataplane.KeyTarget, target, dataplane.KeyChannelTarget, channel, dataplane.KeyBackendService, "c", dataplane.KeyLeafCluster, "c", dataplane.KeyStatus, "OK"): 1,
	})
	metrictest.WaitSeries(t, ctx, reader, dataplane.MetricDrops, map[string]float64{drops: 1})

	// One RPC held in flight in cluster c, whose max_requests is 5.
	release := back.Hold()
	done := make(chan error, 1)
	go func() {
		_, err := client.EmptyCall(ctx, &testpb.Empty{})
		done <- err
	}()
	if err := back.WaitCalls(ctx, 2); err != nil {
		t.Fatal(err)
	}
	gauge := metrictest.Lbl(dataplane.KeyTarget, target, dataplane.KeyLeafCluster, "c", dataplane.KeyEDSService, "")
	if got := metrictest.Series(metrictest.Collect(t, reader), dataplane.MetricInFlight)[gauge]; got != 1 {
		t.Errorf("in_flight{c} = %v, want 1", got)
	}
	if got := metrictest.Series(metrictest.Collect(t, reader), dataplane.MetricMaxRequests)[gauge]; got != 5 {
		t.Errorf("max_requests{c} = %v, want 5", got)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// An RPC that ends with an error is counted by the code's name, as
	// gRPC's own metrics name it.
	release = back.Hold()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = client.EmptyCall(short, &testpb.Empty{})
	cancel()
	release()
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("held RPC: %v, want DEADLINE_EXCEEDED", err)
	}
	calls := func(code string) string {
		return metrictest.Lbl(dataplane.KeyTarget, target, dataplane.KeyChannelTarget, channel, dataplane.KeyBackendService, "c", dataplane.KeyLeafCluster, "c", dataplane.KeyStatus, code)
	}
	metrictest.WaitSeries(t, ctx, reader, dataplane.MetricCalls, map[string]float64{calls("OK"): 2, calls("DEADLINE_EXCEEDED"): 1})
}
