package exporters

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
)

// Provider is an OpenTelemetry SDK MeterProvider wired to one exporter.
// Give it to telemetry.WithMeterProvider. Its Shutdown exports what has
// not been exported yet and stops the exporter; ForceFlush (from
// sdkmetric.MeterProvider) exports without stopping.
type Provider struct {
	*sdkmetric.MeterProvider
	// Handler serves the metrics in the Prometheus text exposition format,
	// for a pull endpoint such as /metrics. It is set by Prometheus only.
	Handler http.Handler
	// push asks for the exports of the push exporters; nil for
	// Prometheus.
	push *pusher
}

// Shutdown stops the periodic exports, exports what has not been exported
// yet and stops the exporter; after it, the Provider records nothing. It
// may be called more than once.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p.push != nil {
		p.push.stop()
	}
	return p.MeterProvider.Shutdown(ctx)
}

// Option configures the exporters. Options that do not apply to an
// exporter are ignored by it.
type Option interface{ apply(*config) }

type config struct {
	res      *resource.Resource
	views    []sdkmetric.View
	interval time.Duration
	insecure bool
	headers  map[string]string
	registry *prometheus.Registry
	logger   *slog.Logger
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithResource sets the OpenTelemetry resource that describes the process
// (service.name and so on). The default is resource.Default(), which reads
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
func WithResource(r *resource.Resource) Option {
	return optionFunc(func(c *config) { c.res = r })
}

// WithViews adds SDK views, for example to change a histogram's buckets or
// drop an instrument.
func WithViews(views ...sdkmetric.View) Option {
	return optionFunc(func(c *config) { c.views = append(c.views, views...) })
}

// WithInterval sets how often the push exporters (OTLP, stdout) export.
// The default is the SDK's, 60s (OTEL_METRIC_EXPORT_INTERVAL).
func WithInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.interval = d })
}

// WithInsecure makes the OTLP exporters use plaintext (h2c for gRPC, http
// for HTTP), for a Collector on loopback or inside a trusted network.
func WithInsecure() Option {
	return optionFunc(func(c *config) { c.insecure = true })
}

// WithHeaders adds headers (gRPC metadata) to every OTLP export, for
// example an authentication token.
func WithHeaders(h map[string]string) Option {
	return optionFunc(func(c *config) {
		if c.headers == nil {
			c.headers = map[string]string{}
		}
		for k, v := range h {
			c.headers[k] = v
		}
	})
}

// WithRegistry makes Prometheus register its collector in reg and serve
// reg, so that other collectors registered there are served too. The
// default is a new registry of its own; the global one is never used.
func WithRegistry(reg *prometheus.Registry) Option {
	return optionFunc(func(c *config) { c.registry = reg })
}

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.res == nil {
		c.res = resource.Default()
	}
	return c
}

func (c *config) provider(reader sdkmetric.Reader) *sdkmetric.MeterProvider {
	opts := []sdkmetric.Option{sdkmetric.WithReader(reader), sdkmetric.WithResource(c.res)}
	if len(c.views) > 0 {
		opts = append(opts, sdkmetric.WithView(c.views...))
	}
	return sdkmetric.NewMeterProvider(opts...)
}

// Prometheus makes a Provider whose Handler serves the metrics in the
// Prometheus text format, from a registry of its own (or WithRegistry's).
// Names follow OpenTelemetry's default translation: dots become
// underscores, counters get _total, units other than braced ones become a
// suffix (grpc.xds_client.resources → grpc_xds_client_resources,
// grpc.xds_client.server_failure → grpc_xds_client_server_failure_total,
// label grpc.xds.cache_state → grpc_xds_cache_state). Every series carries
// otel_scope_name and otel_scope_version, and a target_info series
// describes the resource. Serve Handler with ServePrometheus or any
// http.ServeMux.
func Prometheus(opts ...Option) (*Provider, error) {
	c := newConfig(opts)
	reg := c.registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("exporters: prometheus: %w", err)
	}
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return &Provider{MeterProvider: c.provider(exp), Handler: h}, nil
}

// ServePrometheus serves h on /metrics at addr ("127.0.0.1:9464", or
// ":0" for a port chosen by the system) and returns the address it
// listens on. ctx bounds the listening only; the server runs until
// shutdown is called, which stops it gracefully (bounded by its own ctx)
// and waits for its goroutine.
func ServePrometheus(ctx context.Context, addr string, h http.Handler) (boundAddr string, shutdown func(context.Context) error, err error) {
	if h == nil {
		return "", nil, errors.New("exporters: ServePrometheus: nil handler")
	}
	var lc net.ListenConfig
	lis, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("exporters: listen on %q for /metrics: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Serve returns http.ErrServerClosed after Shutdown; any other
		// error means the listener failed, which scrapers see.
		_ = srv.Serve(lis)
	}()
	shutdown = func(ctx context.Context) error {
		err := srv.Shutdown(ctx)
		if err != nil {
			srv.Close()
		}
		<-done
		return err
	}
	return lis.Addr().String(), shutdown, nil
}

// OTLPGRPC makes a Provider that pushes to an OpenTelemetry Collector (or
// any OTLP receiver) over gRPC every interval. endpoint is "host:port"
// (default port 4317) or a URL ("http://host:4317"). TLS is used unless
// WithInsecure is given or the URL's scheme is http. The connection is
// made lazily: a Collector that is down delays nothing but the exports.
func OTLPGRPC(ctx context.Context, endpoint string, opts ...Option) (*Provider, error) {
	c := newConfig(opts)
	var eo []otlpmetricgrpc.Option
	if strings.Contains(endpoint, "://") {
		eo = append(eo, otlpmetricgrpc.WithEndpointURL(endpoint))
	} else if endpoint != "" {
		eo = append(eo, otlpmetricgrpc.WithEndpoint(endpoint))
	}
	if c.insecure {
		eo = append(eo, otlpmetricgrpc.WithInsecure())
	}
	if len(c.headers) > 0 {
		eo = append(eo, otlpmetricgrpc.WithHeaders(c.headers))
	}
	exp, err := otlpmetricgrpc.New(ctx, eo...)
	if err != nil {
		return nil, fmt.Errorf("exporters: OTLP gRPC to %q: %w", endpoint, err)
	}
	return c.periodic(exp, "OTLP gRPC to "+endpoint), nil
}

// OTLPHTTP makes a Provider that pushes to an OpenTelemetry Collector (or
// any OTLP receiver) over HTTP with protobuf bodies every interval.
// endpoint is "host:port" (default port 4318, path /v1/metrics) or a URL
// ("http://host:4318/v1/metrics"). TLS is used unless WithInsecure is
// given or the URL's scheme is http.
func OTLPHTTP(ctx context.Context, endpoint string, opts ...Option) (*Provider, error) {
	c := newConfig(opts)
	var eo []otlpmetrichttp.Option
	if strings.Contains(endpoint, "://") {
		eo = append(eo, otlpmetrichttp.WithEndpointURL(endpoint))
	} else if endpoint != "" {
		eo = append(eo, otlpmetrichttp.WithEndpoint(endpoint))
	}
	if c.insecure {
		eo = append(eo, otlpmetrichttp.WithInsecure())
	}
	if len(c.headers) > 0 {
		eo = append(eo, otlpmetrichttp.WithHeaders(c.headers))
	}
	exp, err := otlpmetrichttp.New(ctx, eo...)
	if err != nil {
		return nil, fmt.Errorf("exporters: OTLP HTTP to %q: %w", endpoint, err)
	}
	return c.periodic(exp, "OTLP HTTP to "+endpoint), nil
}

// Stdout makes a Provider that writes every export to w as one JSON
// document (stdoutmetric's encoding), every interval and at Shutdown. It
// is meant for debugging and tests.
func Stdout(w io.Writer, opts ...Option) (*Provider, error) {
	c := newConfig(opts)
	if w == nil {
		return nil, errors.New("exporters: Stdout: nil writer")
	}
	exp, err := stdoutmetric.New(stdoutmetric.WithWriter(w))
	if err != nil {
		return nil, fmt.Errorf("exporters: stdout: %w", err)
	}
	return c.periodic(exp, "stdout"), nil
}
