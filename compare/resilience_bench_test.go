package compare_test

import (
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

// BenchmarkRPCResilience makes unary RPCs over loopback to two healthy
// backends of one cluster, through an xdslens channel and through
// grpc-go's own xDS channel in the same run, with each resilience
// feature configured on its own: none, outlier detection on the cluster,
// a retry policy on the route (no RPC fails, so each RPC pays for the
// policy, not for retries), and a max_stream_duration on the route.
// Compare the channels with benchstat -col /channel, and the configs of
// one channel with benchstat -col /config (-count 6 or more).
func BenchmarkRPCResilience(b *testing.B) {
	configs := []struct {
		name    string
		route   func() *routev3.RouteAction
		cluster func() proto.Message
	}{
		{name: "none"},
		{name: "outlier_detection", cluster: func() proto.Message {
			return controlplane.WithOutlierDetection(controlplane.Cluster("c", ""), 10*time.Second, 30*time.Second)
		}},
		{name: "retry", route: func() *routev3.RouteAction {
			return controlplane.WithRetry(rpctest.ToCluster("c"), "unavailable,resource-exhausted", 3, 10*time.Millisecond, 100*time.Millisecond)
		}},
		{name: "max_stream_duration", route: func() *routev3.RouteAction {
			return controlplane.WithMaxStreamDuration(rpctest.ToCluster("c"), time.Minute, 0)
		}},
	}
	for _, cfg := range configs {
		e := rpctest.NewEnv(b, 2)
		action := rpctest.ToCluster("c")
		if cfg.route != nil {
			action = cfg.route()
		}
		var cluster proto.Message = controlplane.Cluster("c", "")
		if cfg.cluster != nil {
			cluster = cfg.cluster()
		}
		e.Set(controlplane.Listener("svc", "svc-route"),
			rpctest.RouteConfig("svc-route", rpctest.Route(rpctest.PrefixMatch("/"), action)),
			cluster, controlplane.Endpoints("c", e.Addr(0), e.Addr(1)))
		for _, ch := range []struct {
			name string
			conn *grpc.ClientConn
		}{
			{"xdslens", e.Dial("xdslens:///svc")},
			{"grpc-go", dialGRPC(e, "xds:///svc")},
		} {
			client := testgrpc.NewTestServiceClient(ch.conn)
			ctx := xdstest.Context(b)
			if _, err := client.EmptyCall(ctx, &testpb.Empty{}, grpc.WaitForReady(true)); err != nil {
				b.Fatal(err)
			}
			b.Run("config="+cfg.name+"/channel="+ch.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := client.EmptyCall(ctx, &testpb.Empty{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
