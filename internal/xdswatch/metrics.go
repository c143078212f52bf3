package xdswatch

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/xdslens/xdslens/exporters"
	"github.com/xdslens/xdslens/telemetry"
	"github.com/xdslens/xdslens/xdsclient"
)

// metricsShutdownTimeout bounds the graceful stop of the metrics server
// and the last OTLP export.
const metricsShutdownTimeout = 5 * time.Second

// defaultServiceName is the OpenTelemetry service.name of xdswatch's
// metrics when neither --service-name nor the environment names one.
const defaultServiceName = "xdswatch"

// metricsResource is the OpenTelemetry resource that describes xdswatch in
// its metrics (Prometheus target_info, the resource of OTLP exports): the
// SDK's default, which reads OTEL_RESOURCE_ATTRIBUTES and
// OTEL_SERVICE_NAME, with service.name from --service-name when given,
// else from the environment, else "xdswatch", as OpenTelemetry's
// conventions ask of a service rather than the SDK's
// "unknown_service:PROGRAM".
func metricsResource(cfg *config) (*resource.Resource, error) {
	base := resource.Default()
	if !cfg.given["service-name"] {
		if v, ok := base.Set().Value(semconv.ServiceNameKey); ok && !strings.HasPrefix(v.AsString(), "unknown_service") {
			return base, nil
		}
	}
	return resource.Merge(base, resource.NewSchemaless(semconv.ServiceName(cfg.serviceName)))
}

// serveMetrics serves the metrics of the pool's clients (package telemetry:
// the gRFC A78 instruments and xdslens's own) and, once its provider is in
// meters, of the channels' data planes as Prometheus text on
// http://addr/metrics, from a registry of its own, describing the process
// as cfg says. The returned func stops the server and detaches the metrics
// from the pool.
func serveMetrics(addr string, pool *xdsclient.Pool, cfg *config, meters *meters) (string, func(), error) {
	p, m, err := observe(pool, cfg, func(opts ...exporters.Option) (*exporters.Provider, error) {
		return exporters.Prometheus(opts...)
	})
	if err != nil {
		return "", nil, err
	}
	bound, shutdown, err := exporters.ServePrometheus(context.Background(), addr, p.Handler)
	if err != nil {
		m.Close()
		p.Shutdown(context.Background())
		return "", nil, err
	}
	*meters = append(*meters, p)
	return bound, func() {
		ctx, cancel := context.WithTimeout(context.Background(), metricsShutdownTimeout)
		defer cancel()
		shutdown(ctx)
		m.Close()
		p.Shutdown(ctx)
	}, nil
}

// observe makes a provider with newProvider, given the options that
// describe the process as cfg says and opts, and attaches to it the
// metrics of the pool's clients (package telemetry).
func observe(pool *xdsclient.Pool, cfg *config, newProvider func(...exporters.Option) (*exporters.Provider, error), opts ...exporters.Option) (*exporters.Provider, *telemetry.Metrics, error) {
	res, err := metricsResource(cfg)
	if err != nil {
		return nil, nil, err
	}
	p, err := newProvider(append([]exporters.Option{exporters.WithResource(res)}, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	m, err := telemetry.New(pool, telemetry.WithMeterProvider(p))
	if err != nil {
		p.Shutdown(context.Background())
		return nil, nil, err
	}
	return p, m, nil
}
