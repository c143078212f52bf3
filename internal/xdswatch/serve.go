package xdswatch

import (
	"fmt"
	"io"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/xdslens/xdslens/xdsclient"
)

// serveFunc starts one server or exporter beside the watches on addr
// (HOST:PORT, port 0 allowed; a URL for OTLP) over the clients of pool, as
// cfg says; one that exports metrics adds its MeterProvider to meters, for
// the channels' data-plane metrics. It returns the address actually bound
// (the URL exported to) and a func that stops it.
type serveFunc func(addr string, pool *xdsclient.Pool, cfg *config, meters *meters) (bound string, stop func(), err error)

// meters are the MeterProviders of the metrics sidecars (Prometheus,
// OTLP): each channel feeds its data-plane metrics to all of them, beside
// the clients' metrics.
type meters []metric.MeterProvider

// sidecars are the servers started beside the watches.
type sidecars struct {
	// csds and metrics are the bound addresses, "" when not serving.
	csds    string
	metrics string
	// otlp is the URL the metrics are pushed to, "" for none; otlpEvery
	// how often.
	otlp      string
	otlpEvery time.Duration
	// meters are the providers of the metrics sidecars.
	meters meters
	// stops stop the running servers.
	stops []func()
}

// startSidecars starts the servers cfg asks for. A failure stops the ones
// already started and is returned.
func startSidecars(pool *xdsclient.Pool, cfg *config) (*sidecars, error) {
	s := &sidecars{otlpEvery: cfg.otlpInterval}
	for _, sc := range []struct {
		flag  string
		addr  string
		serve serveFunc
		bound *string
	}{
		{"--csds-addr", cfg.csdsAddr, serveAdmin, &s.csds},
		{"--metrics-addr", cfg.metricsAddr, serveMetrics, &s.metrics},
		{"--otlp-endpoint", cfg.otlpEndpoint, pushOTLP, &s.otlp},
	} {
		if sc.addr == "" {
			continue
		}
		bound, stop, err := sc.serve(sc.addr, pool, cfg, &s.meters)
		if err != nil {
			s.stop()
			return nil, fmt.Errorf("%s %s: %w", sc.flag, sc.addr, err)
		}
		*sc.bound = bound
		s.stops = append(s.stops, stop)
	}
	return s, nil
}

// stop stops every running server, last started first.
func (s *sidecars) stop() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
	s.stops = nil
}

// printTry prints on w, for people, what to try on the running servers.
func (s *sidecars) printTry(w io.Writer) {
	if s.csds != "" {
		fmt.Fprintf(w, "xdswatch: admin port (CSDS, channelz, health, reflection) on %s; try: grpcdebug %s xds status   or: grpcdebug %s channelz channels\n", s.csds, s.csds, s.csds)
	}
	if s.metrics != "" {
		fmt.Fprintf(w, "xdswatch: metrics on http://%s/metrics; try: curl http://%s/metrics\n", s.metrics, s.metrics)
	}
	if s.otlp != "" {
		every := "the OpenTelemetry SDK's interval (OTEL_METRIC_EXPORT_INTERVAL, else 60s)"
		if s.otlpEvery > 0 {
			every = s.otlpEvery.String()
		}
		fmt.Fprintf(w, "xdswatch: metrics pushed with OTLP to %s every %s\n", s.otlp, every)
	}
}
