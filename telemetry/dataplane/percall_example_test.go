package dataplane_test

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/xdslens/xdslens/internal/testing/metrictest"
	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/telemetry/dataplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// newObservedChannel returns a channel to the xDS listener "payments"
// whose RPCs are measured with gRFC A66's per-call instruments of mp,
// labelled with their cluster and locality, and traced with spans of tp
// that say how each attempt was routed.
func newObservedChannel(pool *xdsclient.Pool, mp metric.MeterProvider, tp trace.TracerProvider) (*grpc.ClientConn, error) {
	return grpc.NewClient("xdslens:///payments", append(xdsgrpc.DialOptions(pool,
		dataplane.WithMeterProvider(mp), dataplane.WithPerCallMetrics(mp), dataplane.WithTracerProvider(tp)),
		grpc.WithTransportCredentials(insecure.NewCredentials()))...)
}

// An RPC's attempt, by cluster and locality, and its attempt span, with
// the routing decision.
func ExampleWithPerCallMetrics() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, stop, err := rpctest.StartPayments(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(ctx)
	conn, err := newObservedChannel(pool, mp, tp)
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
	attempts, _ := metrictest.Find(rm, dataplane.MetricAttemptDuration)
	for _, p := range attempts.Data.(metricdata.Histogram[float64]).DataPoints {
		cluster, _ := p.Attributes.Value(dataplane.KeyBackendService)
		locality, _ := p.Attributes.Value(dataplane.KeyLocality)
		fmt.Println(p.Count, "attempt in", cluster.Emit(), locality.Emit())
	}
	for _, s := range spans.Ended() {
		if s.Name() != "Attempt.grpc.health.v1.Health.Check" {
			continue
		}
		for _, kv := range s.Attributes() {
			if kv.Key == dataplane.KeyRouteConfig || kv.Key == dataplane.KeyCluster || kv.Key == dataplane.KeySpanLocality {
				fmt.Println(kv.Key, kv.Value.Emit())
			}
		}
	}
	// Output:
	// 1 attempt in payments-backend {region="loopback", zone="", sub_zone=""}
	// xds.route_config payments-route
	// xds.cluster payments-backend
	// xds.locality {region="loopback", zone="", sub_zone=""}
}
