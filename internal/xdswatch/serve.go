package xdswatch

import (
	"fmt"
	"io"
	"sync"
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
	// stops stop the running servers; lastPushes, among them, make the
	// last export of the push exporters (OTLP) and stop them. Each may be
	// called more than once.
	stops      []func()
	lastPushes []func()
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
		push  bool
	}{
		{"--csds-addr", cfg.csdsAddr, serveAdmin, &s.csds, false},
		{"--metrics-addr", cfg.metricsAddr, serveMetrics, &s.metrics, false},
		{"--otlp-endpoint", cfg.otlpEndpoint, pushOTLP, &s.otlp, true},
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
		stop = sync.OnceFunc(stop)
		s.stops = append(s.stops, stop)
		if sc.push {
			s.lastPushes = append(s.lastPushes, stop)
		}
	}
	return s, nil
}

// pushLast makes the last export of the push exporters and stops them,
// before the watches and channels end: so that it carries every
// instrument as it was, the gauges of the cache and of the circuit
// breakers included, which the end of the watches and channels empties.
func (s *sidecars) pushLast() {
	for _, push := range s.lastPushes {
		push()
	}
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
