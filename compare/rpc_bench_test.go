package compare_test

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/xdslens/xdslens/internal/controlplane"
	"github.com/xdslens/xdslens/internal/rpctest"
	"github.com/xdslens/xdslens/internal/xdstest"
)

// BenchmarkRPC makes unary RPCs over loopback to two backends of one
// cluster, through an xdslens channel and through grpc-go's own xDS
// channel, in the same run, serially and from parallel goroutines.
// Compare the two with benchstat -col /channel (-count 6 or more).
func BenchmarkRPC(b *testing.B) {
	e := rpctest.NewEnv(b, 2)
	e.Set(controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("c"))),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.Addr(0), e.Addr(1)))
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
		b.Run("mode=serial/channel="+ch.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := client.EmptyCall(ctx, &testpb.Empty{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("mode=parallel/channel="+ch.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := client.EmptyCall(context.Background(), &testpb.Empty{}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
