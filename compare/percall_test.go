package compare_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	grpcotel "google.golang.org/grpc/stats/opentelemetry"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/xds"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/telemetry/dataplane"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// grpcGoPerCallLabels are the optional labels of gRPC-Go's plugin that
// name the cluster and the locality of an attempt.
var grpcGoPerCallLabels = []string{"grpc.lb.locality", "grpc.lb.backend_service"}

// perCallSeries returns, for each per-call instrument, its series by
// label set with grpc.target left out (the two channels' targets differ
// by their scheme), each with its count of recordings.
func perCallSeries(t *testing.T, r *sdkmetric.ManualReader) map[string]map[string]uint64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]uint64{}
	label := func(s attribute.Set) string {
		var parts []string
		for _, kv := range s.ToSlice() {
			if kv.Key != "grpc.target" {
				parts = append(parts, string(kv.Key)+"="+kv.Value.Emit())
			}
		}
		return strings.Join(parts, ",")
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if !strings.HasPrefix(m.Name, "grpc.client.") {
				continue
			}
			series := map[string]uint64{}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					series[label(p.Attributes)] = uint64(p.Value)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					series[label(p.Attributes)] = p.Count
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					series[label(p.Attributes)] = p.Count
				}
			}
			out[m.Name] = series
		}
	}
	return out
}

// TestSideBySidePerCallLabels makes the same RPCs through an xdslens
// channel with WithPerCallMetrics and through grpc-go's xDS channel with
// gRPC-Go's OpenTelemetry plugin, its optional labels grpc.lb.locality
// and grpc.lb.backend_service enabled: every per-call instrument has the
// same series on both, label values and counts, but for grpc.target's
// scheme. The RPCs go to two clusters in two localities, one through an
// aggregate cluster (whose leaf names the attempts, gRFC A89), by
// generated stubs (grpc.method by name) and by Invoke (grpc.method
// "other"), answered OK and RESOURCE_EXHAUSTED. (Not UNIMPLEMENTED: an
// unknown method is answered before the request is read, and when that
// answer closes the stream before the client writes its request, gRPC-Go
// v1.85.0 ends the attempt with no error in stats.End, which its plugin
// records as OK; see telemetry/dataplane/attemptstatus.go.)
func TestSideBySidePerCallLabels(t *testing.T) {
	e := rpctest.NewEnv(t, 2)
	e.Set(controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route",
			rpctest.Route(rpctest.PathMatch("/grpc.testing.TestService/EmptyCall"), rpctest.ToCluster("a")),
			rpctest.Route(rpctest.PathMatch("/grpc.testing.TestService/UnaryCall"), rpctest.ToCluster("agg")),
			rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("b"))),
		controlplane.AggregateCluster("agg", "b"),
		controlplane.Cluster("a", ""), controlplane.Cluster("b", ""),
		rpctest.LocalityEndpoints("a", rpctest.Locality{Zone: "za", Weight: 1, Addrs: []string{e.Addr(0)}}),
		rpctest.LocalityEndpoints("b", rpctest.Locality{Zone: "zb", Weight: 1, Addrs: []string{e.Addr(1)}}))

	ourReader := sdkmetric.NewManualReader()
	ourMP := sdkmetric.NewMeterProvider(sdkmetric.WithReader(ourReader))
	defer ourMP.Shutdown(context.Background())
	ourConn, err := grpc.NewClient("xdslens:///svc", append(xdsgrpc.DialOptions(e.Pool, dataplane.WithPerCallMetrics(ourMP)),
		grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer ourConn.Close()

	theirReader := sdkmetric.NewManualReader()
	theirMP := sdkmetric.NewMeterProvider(sdkmetric.WithReader(theirReader))
	defer theirMP.Shutdown(context.Background())
	rb, err := xds.NewXDSResolverWithConfigForTesting([]byte(e.Bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	theirConn, err := grpc.NewClient("xds:///svc", grpc.WithResolvers(rb), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpcotel.DialOption(grpcotel.Options{MetricsOptions: grpcotel.MetricsOptions{MeterProvider: theirMP, OptionalLabels: grpcGoPerCallLabels}}))
	if err != nil {
		t.Fatal(err)
	}
	defer theirConn.Close()

	ctx := xdstest.Context(t)
	for name, conn := range map[string]*grpc.ClientConn{"xdslens": ourConn, "grpc-go": theirConn} {
		client := testgrpc.NewTestServiceClient(conn)
		for range 3 {
			if _, err := client.EmptyCall(ctx, &testpb.Empty{}, grpc.WaitForReady(true)); err != nil {
				t.Fatalf("%s: EmptyCall: %v", name, err)
			}
		}
		if _, err := client.UnaryCall(ctx, &testpb.SimpleRequest{Payload: &testpb.Payload{Body: make([]byte, 64)}}); err != nil {
			t.Fatalf("%s: UnaryCall: %v", name, err)
		}
		for range 2 {
			if err := conn.Invoke(ctx, "/grpc.testing.TestService/UnaryCall", &emptypb.Empty{}, &emptypb.Empty{}); err != nil {
				t.Fatalf("%s: UnaryCall without grpc.StaticMethod: %v", name, err)
			}
		}
		e.Backends[1].Fail(backends.Failure{Every: 1, Code: codes.ResourceExhausted})
		if _, err := client.UnaryCall(ctx, &testpb.SimpleRequest{}); status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("%s: UnaryCall: %v, want RESOURCE_EXHAUSTED from the backend", name, err)
		}
		e.Backends[1].Fail(backends.Failure{})
	}

	got, want := perCallSeries(t, ourReader), perCallSeries(t, theirReader)
	for _, name := range []string{"grpc.client.attempt.started", "grpc.client.attempt.duration", "grpc.client.attempt.sent_total_compressed_message_size",
		"grpc.client.attempt.rcvd_total_compressed_message_size", "grpc.client.call.duration"} {
		if len(want[name]) == 0 {
			t.Errorf("grpc-go recorded no %s", name)
		}
		if !maps.Equal(got[name], want[name]) {
			t.Errorf("%s:\n xdslens %v\n grpc-go %v", name, sortedSeries(got[name]), sortedSeries(want[name]))
		}
	}
	t.Logf("attempt.duration: %v", sortedSeries(got["grpc.client.attempt.duration"]))
	// What the labels are, spelled out once.
	wantAttempt := `grpc.lb.backend_service=b,grpc.lb.locality={region="r", zone="zb", sub_zone=""},grpc.method=grpc.testing.TestService/UnaryCall,grpc.status=OK`
	if got["grpc.client.attempt.duration"][wantAttempt] != 1 {
		t.Errorf("xdslens: no attempt %s", wantAttempt)
	}

	// Why xdslens records these instruments itself: gRPC-Go's plugin on an
	// xdslens channel cannot see the cluster or the locality (its
	// policies set them through an internal package), and leaves both
	// labels empty. If this changes, the README's advice should too.
	pluginReader := sdkmetric.NewManualReader()
	pluginMP := sdkmetric.NewMeterProvider(sdkmetric.WithReader(pluginReader))
	defer pluginMP.Shutdown(context.Background())
	pluginConn, err := grpc.NewClient("xdslens:///svc", append([]grpc.DialOption{
		grpcotel.DialOption(grpcotel.Options{MetricsOptions: grpcotel.MetricsOptions{MeterProvider: pluginMP, OptionalLabels: grpcGoPerCallLabels}})},
		append(xdsgrpc.DialOptions(e.Pool), grpc.WithTransportCredentials(insecure.NewCredentials()))...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer pluginConn.Close()
	if _, err := testgrpc.NewTestServiceClient(pluginConn).UnaryCall(ctx, &testpb.SimpleRequest{}, grpc.WaitForReady(true)); err != nil {
		t.Fatal(err)
	}
	blank := `grpc.lb.backend_service=,grpc.lb.locality=,grpc.method=grpc.testing.TestService/UnaryCall,grpc.status=OK`
	if plugin := perCallSeries(t, pluginReader)["grpc.client.attempt.duration"]; plugin[blank] != 1 {
		t.Errorf("gRPC-Go's plugin on an xdslens channel: %v, want the cluster and locality empty (%s)", sortedSeries(plugin), blank)
	}
}

// sortedSeries renders series in label order.
func sortedSeries(s map[string]uint64) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(s)) {
		out = append(out, k+": "+strings.Repeat("|", int(s[k])))
	}
	return out
}
