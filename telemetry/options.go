package telemetry

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
)

// Option configures New.
type Option interface{ apply(*config) }

type config struct {
	mp metric.MeterProvider
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithMeterProvider sets the MeterProvider the instruments are created
// from. The default, or a nil mp, is otel.GetMeterProvider() at the time
// New is called.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.mp = mp })
}

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	return c
}
