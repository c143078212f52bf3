package compare_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental/opentelemetry"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	grpcotel "google.golang.org/grpc/stats/opentelemetry"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/telemetry/dataplane"
	"github.com/xdslens/xdslens/xdsgrpc"
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

// BenchmarkRPCTelemetry makes unary RPCs through xdslens channels that
// differ only by how they are observed, in the same run: not at all,
// with xdslens's per-call metrics or traces (telemetry/dataplane), or with
// gRPC-Go's OpenTelemetry plugin doing the same (its optional labels on),
// all on the OpenTelemetry SDK (a ManualReader that is never read; a
// TracerProvider that samples every span and exports none; W3C trace
// context propagation). Besides wall time, each reports the CPU time of
// the process per RPC (cpu-ns/op: client and backend). Compare with
// benchstat -col /telemetry (-count 6 or more).
func BenchmarkRPCTelemetry(b *testing.B) {
	e := rpctest.NewEnv(b, 2)
	e.Set(controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("c"))),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.Addr(0), e.Addr(1)))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer mp.Shutdown(context.Background())
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	// Both propagate each attempt's span context in W3C's traceparent.
	defer otel.SetTextMapPropagator(otel.GetTextMapPropagator())
	otel.SetTextMapPropagator(propagation.TraceContext{})
	plugin := func(o grpcotel.Options) []grpc.DialOption { return []grpc.DialOption{grpcotel.DialOption(o)} }
	for _, c := range []struct {
		name   string
		ours   []xdsgrpc.Option
		plugin []grpc.DialOption
	}{
		{name: "none"},
		{name: "xdslens-metrics", ours: []xdsgrpc.Option{dataplane.WithPerCallMetrics(mp)}},
		{name: "grpc-go-metrics", plugin: plugin(grpcotel.Options{MetricsOptions: grpcotel.MetricsOptions{MeterProvider: mp, OptionalLabels: grpcGoPerCallLabels}})},
		{name: "xdslens-traces", ours: []xdsgrpc.Option{dataplane.WithTracerProvider(tp)}},
		{name: "grpc-go-traces", plugin: plugin(grpcotel.Options{TraceOptions: opentelemetry.TraceOptions{TracerProvider: tp, TextMapPropagator: propagation.TraceContext{}}})},
	} {
		opts := append(append(c.plugin, xdsgrpc.DialOptions(e.Pool, c.ours...)...), grpc.WithTransportCredentials(insecure.NewCredentials()))
		conn, err := grpc.NewClient("xdslens:///svc", opts...)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		client := testgrpc.NewTestServiceClient(conn)
		ctx := xdstest.Context(b)
		if _, err := client.EmptyCall(ctx, &testpb.Empty{}, grpc.WaitForReady(true)); err != nil {
			b.Fatal(err)
		}
		b.Run("telemetry="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			start := cpuTime(b)
			for b.Loop() {
				if _, err := client.EmptyCall(context.Background(), &testpb.Empty{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime returns the CPU time the process has used, user and system: on
// a machine shared with other work, the CPU an RPC costs (client and
// backend, both in this process) varies much less than its wall time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
