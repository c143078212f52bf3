package dataplane_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/xdslens/xdslens/internal/testing/metrictest"
	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/telemetry/dataplane"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// since returns the series of the metric name that grew between two
// collections, by how much.
func since(before, after metricdata.ResourceMetrics, name string) map[string]float64 {
	b, out := metrictest.Series(before, name), map[string]float64{}
	for k, v := range metrictest.Series(after, name) {
		if d := v - b[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// histogramPoint returns the point of a histogram with the label set
// labels (as metrictest.Lbl renders it): its bounds, count and sum.
func histogramPoint(t *testing.T, rm metricdata.ResourceMetrics, name, labels string) (bounds []float64, count uint64, sum float64) {
	t.Helper()
	m, ok := metrictest.Find(rm, name)
	if !ok {
		t.Fatalf("no %s", name)
	}
	switch d := m.Data.(type) {
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			if metrictest.Labels(p.Attributes) == labels {
				return p.Bounds, p.Count, p.Sum
			}
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			if metrictest.Labels(p.Attributes) == labels {
				return p.Bounds, p.Count, float64(p.Sum)
			}
		}
	default:
		t.Fatalf("%s is a %T, want a histogram", name, m.Data)
	}
	t.Fatalf("%s has no point %s", name, labels)
	return nil, 0, 0
}

// TestPerCallMetrics makes RPCs of each kind on a channel with per-call
// metrics: gRFC A66's instruments count every attempt and call with the
// method (by name for generated stubs, "other" otherwise), the target and
// the status, and label each attempt with the leaf cluster and locality
// of its pick (gRFC A89, A78): a retried RPC is two attempts and one call;
// an RPC no route matches is an attempt with neither; a streaming RPC is
// one call, recorded when its stream ends.
func TestPerCallMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	e := rpctest.NewEnv(t, 1, dataplane.WithPerCallMetrics(mp))
	e.Set(controlplane.Listener("L", "R"),
		rpctest.RouteConfig("R",
			rpctest.Route(rpctest.PrefixMatch("/grpc.testing."), controlplane.WithRetry(rpctest.ToCluster("c"), "unavailable", 2, time.Millisecond, time.Millisecond)),
			rpctest.Route(rpctest.PrefixMatch("/pkg."), rpctest.ToCluster("c"))),
		controlplane.Cluster("c", ""),
		rpctest.LocalityEndpoints("c", rpctest.Locality{Zone: "z1", Weight: 1, Addrs: []string{e.Addr(0)}}))
	conn := e.Dial("xdslens:///L")
	client := testgrpc.NewTestServiceClient(conn)
	ctx := xdstest.Context(t)
	if _, err := client.EmptyCall(ctx, &testpb.Empty{}, grpc.WaitForReady(true)); err != nil {
		t.Fatal(err)
	}
	before := metrictest.Collect(t, reader)

	if _, err := client.UnaryCall(ctx, &testpb.SimpleRequest{Payload: &testpb.Payload{Body: make([]byte, 100)}}); err != nil {
		t.Fatal(err)
	}
	e.Backends[0].Fail(backends.Failure{Every: 2}) // the next answer fails, the one after succeeds
	if _, err := client.EmptyCall(ctx, &testpb.Empty{}); err != nil {
		t.Fatal(err)
	}
	e.Backends[0].Fail(backends.Failure{})
	if err := conn.Invoke(ctx, "/pkg.S/M", &emptypb.Empty{}, &emptypb.Empty{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("/pkg.S/M: %v, want UNIMPLEMENTED from the backend", err)
	}
	if err := conn.Invoke(ctx, "/none.S/M", &emptypb.Empty{}, &emptypb.Empty{}); status.Code(err) != codes.Unavailable {
		t.Fatalf("/none.S/M: %v, want UNAVAILABLE: no route", err)
	}
	stream, err := client.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{}, {}}})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := stream.Recv(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	after := metrictest.Collect(t, reader)

	const (
		target   = "xdslens:///L"
		locality = `{region="r", zone="z1", sub_zone=""}`
		unary    = "grpc.testing.TestService/UnaryCall"
		empty    = "grpc.testing.TestService/EmptyCall"
		streamed = "grpc.testing.TestService/StreamingOutputCall"
	)
	attempt := func(method, code, leaf, locality string) string {
		return metrictest.Lbl("grpc.method", method, "grpc.target", target, "grpc.status", code, "grpc.lb.backend_service", leaf, "grpc.lb.locality", locality)
	}
	call := func(method, code string) string {
		return metrictest.Lbl("grpc.method", method, "grpc.target", target, "grpc.status", code)
	}
	started := func(method string) string { return metrictest.Lbl("grpc.method", method, "grpc.target", target) }
	wantAttempts := map[string]float64{
		attempt(unary, "OK", "c", locality):              1,
		attempt(empty, "UNAVAILABLE", "c", locality):     1,
		attempt(empty, "OK", "c", locality):              1,
		attempt("other", "UNIMPLEMENTED", "c", locality): 1,
		attempt("other", "UNAVAILABLE", "", ""):          1,
		attempt(streamed, "OK", "c", locality):           1,
	}
	for _, name := range []string{dataplane.MetricAttemptDuration, dataplane.MetricAttemptSentSize, dataplane.MetricAttemptRcvdSize} {
		if got := since(before, after, name); !metrictest.Equal(got, wantAttempts) {
			t.Errorf("%s:\n got  %s\n want %s", name, metrictest.Show(got), metrictest.Show(wantAttempts))
		}
	}
	wantStarted := map[string]float64{started(unary): 1, started(empty): 2, started("other"): 2, started(streamed): 1}
	if got := since(before, after, dataplane.MetricAttemptStarted); !metrictest.Equal(got, wantStarted) {
		t.Errorf("%s:\n got  %s\n want %s", dataplane.MetricAttemptStarted, metrictest.Show(got), metrictest.Show(wantStarted))
	}
	wantCalls := map[string]float64{call(unary, "OK"): 1, call(empty, "OK"): 1, call("other", "UNIMPLEMENTED"): 1, call("other", "UNAVAILABLE"): 1, call(streamed, "OK"): 1}
	if got := since(before, after, dataplane.MetricCallDuration); !metrictest.Equal(got, wantCalls) {
		t.Errorf("%s:\n got  %s\n want %s", dataplane.MetricCallDuration, metrictest.Show(got), metrictest.Show(wantCalls))
	}

	// Buckets as gRFC A66 has them; bytes as the wire has them.
	bounds, _, _ := histogramPoint(t, after, dataplane.MetricAttemptDuration, attempt(unary, "OK", "c", locality))
	if !slices.Equal(bounds, dataplane.LatencyBuckets) {
		t.Errorf("attempt duration bounds %v, want gRFC A66's", bounds)
	}
	bounds, _, sum := histogramPoint(t, after, dataplane.MetricAttemptSentSize, attempt(unary, "OK", "c", locality))
	if !slices.Equal(bounds, dataplane.SizeBuckets) || sum < 100 || sum > 120 {
		t.Errorf("sent sizes: bounds %v, sum %v; want gRFC A66's bounds, and a request of 100 bytes and its framing", bounds, sum)
	}
	if _, _, sum := histogramPoint(t, after, dataplane.MetricAttemptRcvdSize, attempt(streamed, "OK", "c", locality)); sum != 0 {
		t.Errorf("received sizes of two empty messages: sum %v, want 0", sum)
	}
	if _, _, sum := histogramPoint(t, after, dataplane.MetricAttemptRcvdSize, attempt(unary, "OK", "c", locality)); sum == 0 {
		t.Error("received sizes of a response with fields: sum 0")
	}
}

// TestPerCallMetricsStreamEnds: a streaming RPC is recorded once, when
// its context ends, when the caller stops reading it early.
func TestPerCallMetricsStreamEnds(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	e := rpctest.NewEnv(t, 1, dataplane.WithPerCallMetrics(mp))
	e.Set(controlplane.Listener("L", "R"), controlplane.RouteConfig("R", []string{"*"}, "c"),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.Addr(0)))
	client := testgrpc.NewTestServiceClient(e.Dial("xdslens:///L"))
	ctx := xdstest.Context(t)
	sctx, cancel := context.WithCancel(ctx)
	stream, err := client.StreamingOutputCall(sctx, &testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{}, {}}}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	cancel()
	want := map[string]float64{metrictest.Lbl("grpc.method", "grpc.testing.TestService/StreamingOutputCall", "grpc.target", "xdslens:///L", "grpc.status", "CANCELLED"): 1}
	var got map[string]float64
	if !rpctest.Poll(ctx, func(context.Context) bool {
		got = metrictest.Series(metrictest.Collect(t, reader), dataplane.MetricCallDuration)
		return metrictest.Equal(got, want)
	}) {
		t.Fatalf("%s:\n got  %s\n want %s", dataplane.MetricCallDuration, metrictest.Show(got), metrictest.Show(want))
	}
}

// TestPerCallMetricsNilProvider: without a MeterProvider nothing is added
// to the channels.
func TestPerCallMetricsNilProvider(t *testing.T) {
	plain := xdsgrpc.NewBuilder(nil).DialOptions()
	with := xdsgrpc.NewBuilder(nil, dataplane.WithPerCallMetrics(nil)).DialOptions()
	if len(with) != len(plain) {
		t.Errorf("WithPerCallMetrics(nil) gives %d dial options, want %d, as without it", len(with), len(plain))
	}
}

// BenchmarkRPCWithoutProviders makes unary RPCs over loopback through two
// xdslens channels, one dialled with DialOptions(pool) alone and one with
// WithPerCallMetrics(nil) and WithTracerProvider(nil) too: without
// providers, per-call metrics and traces add nothing to an RPC. Compare
// with benchstat -col /options.
func BenchmarkRPCWithoutProviders(b *testing.B) {
	e := rpctest.NewEnv(b, 1)
	e.Set(controlplane.Listener("L", "R"), controlplane.RouteConfig("R", []string{"*"}, "c"),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.Addr(0)))
	for _, c := range []struct {
		name string
		opts []xdsgrpc.Option
	}{
		{"none", nil},
		{"nil-providers", []xdsgrpc.Option{dataplane.WithPerCallMetrics(nil), dataplane.WithTracerProvider(nil)}},
	} {
		conn, err := grpc.NewClient("xdslens:///L", append(xdsgrpc.DialOptions(e.Pool, c.opts...), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		client := testgrpc.NewTestServiceClient(conn)
		if _, err := client.EmptyCall(xdstest.Context(b), &testpb.Empty{}, grpc.WaitForReady(true)); err != nil {
			b.Fatal(err)
		}
		b.Run("options="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := client.EmptyCall(context.Background(), &testpb.Empty{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
