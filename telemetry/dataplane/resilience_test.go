package dataplane_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdslens/xdslens/internal/testing/metrictest"
	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/telemetry/dataplane"
)

// TestResilienceMetrics counts a retry (by cluster and code), an injected
// abort (by cluster and kind) and an ejection by outlier detection (by
// cluster and algorithm, with the gauges of ejected endpoints).
func TestResilienceMetrics(t *testing.T) {
	e := rpctest.NewEnv(t, 3)
	reader := measure(t, e.Builder)
	e.Set(controlplane.ListenerWithFault("L", "R", controlplane.FaultAbort(uint32(codes.ResourceExhausted), 100), 0),
		rpctest.RouteConfig("R",
			controlplane.WithFaultOverride(rpctest.Route(rpctest.PrefixMatch("/grpc.testing.TestService/"),
				controlplane.WithRetry(rpctest.ToCluster("c"), "unavailable", 1, time.Millisecond, time.Millisecond)), controlplane.FaultAbort(0, 0)),
			rpctest.Route(rpctest.PrefixMatch(""), rpctest.ToCluster("c"))),
		controlplane.WithOutlierDetection(controlplane.Cluster("c", ""), 50*time.Millisecond, time.Hour),
		controlplane.Endpoints("c", e.Addr(0), e.Addr(1), e.Addr(2)))
	conn := e.Dial("xdslens:///L")
	ctx := xdstest.Context(t)
	if !rpctest.Poll(ctx, func(ctx context.Context) bool { return rpctest.Call(ctx, conn, "/other.S/M").Err != nil }) {
		t.Fatal("no RPC was aborted")
	}
	e.Backends[2].Fail(backends.Failure{Every: 1})
	for {
		rpctest.Call(ctx, conn, "/grpc.testing.TestService/EmptyCall")
		rm := metrictest.Collect(t, reader)
		ej := metrictest.Series(rm, dataplane.MetricEjections)
		if ej[metrictest.Lbl("grpc.lb.backend_service", "c", "grpc.target", "xdslens:///L", "xdslens.channel_target", "xdslens:///L", "xdslens.algorithm", "failure_percentage")] >= 1 {
			if got := metrictest.Series(rm, dataplane.MetricRetries); got[metrictest.Lbl("grpc.lb.backend_service", "c", "grpc.status", "UNAVAILABLE", "grpc.target", "xdslens:///L", "xdslens.channel_target", "xdslens:///L")] < 1 {
				t.Errorf("%s = %s, want a retry after UNAVAILABLE in c", dataplane.MetricRetries, metrictest.Show(got))
			}
			if got := metrictest.Series(rm, dataplane.MetricFaults); got[metrictest.Lbl("grpc.lb.backend_service", "c", "grpc.target", "xdslens:///L", "xdslens.channel_target", "xdslens:///L", "xdslens.fault", "abort")] < 1 {
				t.Errorf("%s = %s, want an abort in c", dataplane.MetricFaults, metrictest.Show(got))
			}
			if got := metrictest.Series(rm, dataplane.MetricEjectedEndpoints); got[metrictest.Lbl("grpc.lb.backend_service", "c", "grpc.target", "xdslens:///L", "xdslens.channel_target", "xdslens:///L")] != 1 {
				t.Errorf("%s = %s, want 1 endpoint of c ejected", dataplane.MetricEjectedEndpoints, metrictest.Show(got))
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("no ejection counted: %s", metrictest.Show(ej))
		}
	}
}
