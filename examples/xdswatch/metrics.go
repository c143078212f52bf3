package main

import (
	"context"
	"time"

	"github.com/xdslens/xdslens/exporters"
	"github.com/xdslens/xdslens/telemetry"
	"github.com/xdslens/xdslens/xdsclient"
)

// metricsShutdownTimeout bounds the graceful stop of the metrics server.
const metricsShutdownTimeout = 5 * time.Second

// serveMetrics serves the metrics of the pool's clients (package telemetry:
// the gRFC A78 instruments and xdslens's own) as Prometheus text on
// http://addr/metrics, from a registry of its own. The returned func stops
// the server and detaches the metrics from the pool.
func serveMetrics(addr string, pool *xdsclient.Pool) (string, func(), error) {
	p, err := exporters.Prometheus()
	if err != nil {
		return "", nil, err
	}
	m, err := telemetry.New(pool, telemetry.WithMeterProvider(p))
	if err != nil {
		p.Shutdown(context.Background())
		return "", nil, err
	}
	bound, shutdown, err := exporters.ServePrometheus(context.Background(), addr, p.Handler)
	if err != nil {
		m.Close()
		p.Shutdown(context.Background())
		return "", nil, err
	}
	return bound, func() {
		ctx, cancel := context.WithTimeout(context.Background(), metricsShutdownTimeout)
		defer cancel()
		shutdown(ctx)
		m.Close()
		p.Shutdown(ctx)
	}, nil
}
