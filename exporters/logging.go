package exporters

import (
	"context"
	"log/slog"
	"sync"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/truncate"
)

// maxLoggedError bounds the error an export failure logs: a receiver's
// status message may be of any size.
const maxLoggedError = 8 << 10

// WithLogger has the push exporters (OTLP, Stdout) report every failed
// export on l as it happens: a warning for the first failure of a cause
// (the gRPC status code of an OTLP gRPC error, else the error's message),
// debug for the failures of the same cause that follow, and info when an
// export succeeds after failures. The failure is then not returned to the
// SDK's reader, which would hand it to OpenTelemetry's global error handler
// (Go's log package unless the program set another), nor by ForceFlush and
// Shutdown: l is where export errors go. Without it, export errors go to
// the global error handler.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) { c.logger = l })
}

// loggingExporter reports the failures of the exports of an exporter on a
// logger, once per cause.
type loggingExporter struct {
	sdkmetric.Exporter
	log *slog.Logger
	// to names the destination of the exports, such as "OTLP gRPC to
	// collector:4317".
	to string

	mu sync.Mutex
	// failures counts the exports that failed in a row; cause is the
	// cause of the last of them.
	failures int
	cause    string
}

// logged wraps exp so that its failures go to c's logger, if it has one.
func (c *config) logged(exp sdkmetric.Exporter, to string) sdkmetric.Exporter {
	if c.logger == nil {
		return exp
	}
	return &loggingExporter{Exporter: exp, log: c.logger, to: to}
}

// Export exports rm, and reports a failure on the logger instead of
// returning it.
func (e *loggingExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	e.report(e.Exporter.Export(ctx, rm))
	return nil
}

// report logs err, a failed export (or collection), nil for a success.
func (e *loggingExporter) report(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err == nil {
		if e.failures > 0 {
			e.log.Info("metrics export works again", "to", e.to, "failed", e.failures)
		}
		e.failures, e.cause = 0, ""
		return
	}
	cause := causeOf(err)
	shown := truncate.String(err.Error(), maxLoggedError)
	switch {
	case e.failures > 0 && cause == e.cause:
		e.log.Debug("metrics export failed again", "to", e.to, "err", shown, "failed", e.failures+1)
	default:
		e.log.Warn("metrics export failed; the next export tries again", "to", e.to, "err", shown)
	}
	e.failures++
	e.cause = cause
}

// causeOf returns what tells one cause of failure from another: the gRPC
// status code of an OTLP gRPC error, else the error's message.
func causeOf(err error) string {
	if s, ok := status.FromError(err); ok {
		return "grpc " + s.Code().String()
	}
	return err.Error()
}
