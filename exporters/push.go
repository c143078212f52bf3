package exporters

import (
	"context"
	"os"
	"strconv"
	"time"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// neverTick is the interval of the SDK's periodic reader under a pusher,
// which asks it for every export: long enough that the reader's own
// ticker never fires. An export of that ticker that meets Shutdown fails
// with the cancelled context, and the SDK hands that failure to the
// global error handler (Go's log, by default) as the program ends.
const neverTick = 100 * 365 * 24 * time.Hour

// defaultInterval is the SDK's export interval.
const defaultInterval = time.Minute

// envInterval names the environment variable of the export interval, in
// milliseconds, as the OpenTelemetry SDK reads it.
const envInterval = "OTEL_METRIC_EXPORT_INTERVAL"

// exportInterval returns how often the push exporters export: WithInterval's
// interval, else OTEL_METRIC_EXPORT_INTERVAL's (a positive number of
// milliseconds; another value is ignored, as the SDK ignores it), else a
// minute.
func (c *config) exportInterval() time.Duration {
	if c.interval > 0 {
		return c.interval
	}
	if ms, err := strconv.ParseInt(os.Getenv(envInterval), 10, 64); err == nil && ms > 0 && ms <= int64(neverTick/time.Millisecond) {
		return time.Duration(ms) * time.Millisecond
	}
	return defaultInterval
}

// periodic returns a MeterProvider whose metrics are exported to exp every
// exportInterval, and the pusher that asks for the exports.
func (c *config) periodic(exp sdkmetric.Exporter, to string) *Provider {
	logged := c.logged(exp, to)
	mp := c.provider(sdkmetric.NewPeriodicReader(logged, sdkmetric.WithInterval(neverTick)))
	report := otel.Handle
	if l, ok := logged.(*loggingExporter); ok {
		report = l.report
	}
	return &Provider{MeterProvider: mp, push: startPusher(mp, c.exportInterval(), report)}
}

// pusher asks a MeterProvider for an export every interval, until stopped.
type pusher struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startPusher starts asking mp for an export every interval, and gives
// report the failures that no logger took (a failed collection).
func startPusher(mp *sdkmetric.MeterProvider, interval time.Duration, report func(error)) *pusher {
	ctx, cancel := context.WithCancel(context.Background())
	p := &pusher{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				// The reader bounds the export with its timeout
				// (OTEL_METRIC_EXPORT_TIMEOUT, else 30s); stop ends the
				// wait for it.
				if err := mp.ForceFlush(ctx); err != nil && ctx.Err() == nil {
					report(err)
				}
			}
		}
	}()
	return p
}

// stop stops asking for exports, and waits until the pusher no longer
// does. It may be called more than once.
func (p *pusher) stop() {
	p.cancel()
	<-p.done
}
