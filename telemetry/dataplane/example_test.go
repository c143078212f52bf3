package dataplane_test

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/xdslens/xdslens/internal/testing/metrictest"
	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/telemetry/dataplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// newMeasuredChannel returns a channel to the xDS listener "payments"
// whose RPCs, configs and circuit breakers are measured with the
// instruments of mp.
func newMeasuredChannel(pool *xdsclient.Pool, mp metric.MeterProvider) (*grpc.ClientConn, error) {
	return grpc.NewClient("xdslens:///payments", append(xdsgrpc.DialOptions(pool, dataplane.WithMeterProvider(mp)),
		grpc.WithTransportCredentials(insecure.NewCredentials()))...)
}

// The data-plane metrics of a channel made by DialOptions, read with a
// ManualReader after one RPC.
func ExampleWithMeterProvider() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, stop, err := rpctest.StartPayments(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	// Any MeterProvider works (package exporters makes them for
	// Prometheus and OTLP); a ManualReader lets the example read it.
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)
	conn, err := newMeasuredChannel(pool, mp)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true)); err != nil {
		fmt.Println(err)
		return
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		fmt.Println(err)
		return
	}
	for k, v := range metrictest.Series(rm, dataplane.MetricCalls) {
		fmt.Println(k, v)
	}
	// Output:
	// grpc.lb.backend_service=payments-backend,grpc.status=OK,grpc.target=xdslens:///payments,xdslens.channel_target=xdslens:///payments,xdslens.leaf_cluster=payments-backend 1
}
