// Package exporters makes OpenTelemetry MeterProviders for the metrics of
// package telemetry in one call each:
//
//   - Prometheus: a pull endpoint; Provider.Handler serves the text format,
//     and ServePrometheus serves it on /metrics at an address.
//   - OTLPGRPC and OTLPHTTP: push to an OpenTelemetry Collector, the path
//     for fleets.
//   - Stdout: JSON documents on a writer, for debugging.
//
// Each returns a *Provider, which is an *sdkmetric.MeterProvider: give it
// to telemetry.WithMeterProvider, and call its Shutdown when done, which
// exports what is pending and stops the exporter. WithLogger reports the
// failed exports of the push exporters on a *slog.Logger as they happen,
// once per cause, instead of through OpenTelemetry's global error handler.
// The push exporters ask the SDK's reader for each export themselves and
// stop asking before Shutdown, so that no periodic export meets Shutdown
// (the SDK would hand that export's "context canceled" to the global
// error handler, Go's log by default, as the program ends).
//
//	p, err := exporters.Prometheus()
//	addr, stop, err := exporters.ServePrometheus(ctx, "127.0.0.1:9464", p.Handler)
//	m, err := telemetry.New(pool, telemetry.WithMeterProvider(p))
//	defer func() { m.Close(); stop(ctx); p.Shutdown(ctx) }()
//
// The Prometheus exporter uses a registry of its own, never the global
// one, and OpenTelemetry's default name translation:
// grpc.xds_client.resources becomes grpc_xds_client_resources,
// grpc.xds_client.server_failure becomes
// grpc_xds_client_server_failure_total, and the label grpc.xds.cache_state
// becomes grpc_xds_cache_state.
package exporters
