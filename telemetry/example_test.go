package telemetry_test

import (
	"context"
	"fmt"
	"log/slog"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/xdslens/xdslens/telemetry"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

func ExampleNew() {
	cfg, err := bootstrap.Parse([]byte(`{
		"xds_servers": [{"server_uri": "127.0.0.1:1", "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": "example"}
	}`))
	if err != nil {
		panic(err)
	}
	client, err := xdsclient.New(cfg, xdsclient.WithTarget("xds:///example"), xdsclient.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	defer client.Close()

	// Any MeterProvider works; see package exporters for Prometheus and
	// OTLP. A ManualReader lets this example read the values.
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	m, err := telemetry.New(client, telemetry.WithMeterProvider(mp))
	if err != nil {
		panic(err)
	}
	defer m.Close()

	// Hooks run in the order they were added: once this one sees the new
	// cache entry, the metrics have seen it too.
	seen := make(chan struct{}, 1)
	defer client.AddHooks(&xdsclient.Hooks{CacheStateChanged: func(xdsclient.CacheStateInfo) {
		select {
		case seen <- struct{}{}:
		default:
		}
	}})()
	defer client.Watch(xdsresource.ClusterType, "backend", xdsclient.WatcherFuncs{})()
	<-seen

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, metric := range sm.Metrics {
			if metric.Name != telemetry.MetricResources {
				continue
			}
			for _, p := range metric.Data.(metricdata.Gauge[int64]).DataPoints {
				for _, kv := range p.Attributes.ToSlice() {
					fmt.Printf("%s=%s\n", kv.Key, kv.Value.AsString())
				}
				fmt.Println("value:", p.Value)
			}
		}
	}
	// Output:
	// grpc.target=xds:///example
	// grpc.xds.authority=#old
	// grpc.xds.cache_state=requested
	// grpc.xds.resource_type=envoy.config.cluster.v3.Cluster
	// value: 1
}
