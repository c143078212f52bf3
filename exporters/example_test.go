package exporters_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/xdslens/xdslens/exporters"
	"github.com/xdslens/xdslens/telemetry"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// serveMetrics serves the metrics of every client of pool in the
// Prometheus text format on http://addr/metrics, until stop is called.
func serveMetrics(ctx context.Context, pool *xdsclient.Pool, addr string) (bound string, stop func(), err error) {
	p, err := exporters.Prometheus() // or OTLPGRPC, OTLPHTTP, Stdout
	if err != nil {
		return "", nil, err
	}
	m, err := telemetry.New(pool, telemetry.WithMeterProvider(p))
	if err != nil {
		p.Shutdown(ctx)
		return "", nil, err
	}
	bound, shutdown, err := exporters.ServePrometheus(ctx, addr, p.Handler)
	if err != nil {
		m.Close()
		p.Shutdown(ctx)
		return "", nil, err
	}
	return bound, func() {
		shutdown(ctx)
		m.Close()
		p.Shutdown(ctx)
	}, nil
}

func ExamplePrometheus() {
	ctx := context.Background()
	cfg, err := bootstrap.Parse([]byte(`{
		"xds_servers": [{"server_uri": "127.0.0.1:1", "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": "example"}
	}`))
	if err != nil {
		panic(err)
	}
	pool := xdsclient.NewPool(cfg, xdsclient.WithLogger(slog.New(slog.DiscardHandler)))
	addr, stop, err := serveMetrics(ctx, pool, "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer stop()

	client, release, err := pool.Get("xds:///example")
	if err != nil {
		panic(err)
	}
	defer release()
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

	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		panic(err)
	}
	for _, s := range families["grpc_xds_client_resources"].GetMetric() {
		var labels []string
		for _, l := range s.GetLabel() {
			if !strings.HasPrefix(l.GetName(), "otel_scope_") {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
		}
		sort.Strings(labels)
		fmt.Println("grpc_xds_client_resources", strings.Join(labels, " "), s.GetGauge().GetValue())
	}
	// Output:
	// grpc_xds_client_resources grpc_target=xds:///example grpc_xds_authority=#old grpc_xds_cache_state=requested grpc_xds_resource_type=envoy.config.cluster.v3.Cluster 1
}
