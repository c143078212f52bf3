package dataplane

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc/connectivity"

	"github.com/xdslens/xdslens/xdsgrpc"
)

// lbMetrics holds the instruments of the load-balancing metrics.
type lbMetrics struct {
	meter metric.Meter
	// clientTarget is xdsgrpc.Builder.ClientTarget.
	clientTarget                   func(channel string) string
	disconnects, succeeded, failed metric.Int64Counter

	mu     sync.Mutex
	counts map[string]metric.Float64Counter   // gRPC's counters, by name
	histos map[string]metric.Float64Histogram // gRPC's histograms, by name
}

func newLBMetrics(c *instruments, clientTarget func(string) string) *lbMetrics {
	m := &lbMetrics{meter: c.meter, clientTarget: clientTarget, counts: map[string]metric.Float64Counter{}, histos: map[string]metric.Float64Histogram{}}
	m.disconnects = c.counter(MetricPickFirstDisconnections, "{disconnection}", "Connections of the endpoint policies of xdslens channels that were READY and are not any more.")
	m.succeeded = c.counter(MetricPickFirstConnectionAttemptsSucceeded, "{attempt}", "Connection attempts of the endpoint policies of xdslens channels that succeeded.")
	m.failed = c.counter(MetricPickFirstConnectionAttemptsFailed, "{attempt}", "Connection attempts of the endpoint policies of xdslens channels that failed.")
	return m
}

// attrs are the labels of the load-balancing metrics of the channel of
// target channel, for the leaf cluster and locality.
func (m *lbMetrics) attrs(channel, leaf, locality string) metric.MeasurementOption {
	return metric.WithAttributes(attribute.String(KeyTarget, m.clientTarget(channel)), attribute.String(KeyChannelTarget, channel),
		attribute.String(KeyBackendService, leaf), attribute.String(KeyLocality, locality))
}

// connectionChanged counts what pick_first's metrics count. The three
// series of a cluster and locality are created together, at 0, so that
// the first increase of each shows in a rate.
func (m *lbMetrics) connectionChanged(i xdsgrpc.ConnectionInfo) {
	ctx, opt := context.Background(), m.attrs(i.Target, i.Leaf, i.Locality)
	for _, c := range []metric.Int64Counter{m.succeeded, m.failed, m.disconnects} {
		c.Add(ctx, 0, opt)
	}
	var c metric.Int64Counter
	switch {
	case i.From == connectivity.Connecting && i.To == connectivity.Ready:
		c = m.succeeded
	case i.From == connectivity.Connecting && i.To == connectivity.TransientFailure:
		c = m.failed
	case i.From == connectivity.Ready:
		c = m.disconnects
	default:
		return
	}
	c.Add(ctx, 1, opt)
}

// lbMetric records a metric of gRPC's registry under its own name.
func (m *lbMetrics) lbMetric(i xdsgrpc.LBMetricInfo) {
	ctx, opt := context.Background(), m.attrs(i.Target, i.Leaf, i.Locality)
	m.mu.Lock()
	defer m.mu.Unlock()
	if i.Histogram {
		h, ok := m.histos[i.Name]
		if !ok {
			var err error
			if h, err = m.meter.Float64Histogram(i.Name, metric.WithUnit(i.Unit)); err != nil {
				return // a name the SDK refuses: nothing to record on
			}
			m.histos[i.Name] = h
		}
		h.Record(ctx, i.Value, opt)
		return
	}
	c, ok := m.counts[i.Name]
	if !ok {
		var err error
		if c, err = m.meter.Float64Counter(i.Name, metric.WithUnit(i.Unit)); err != nil {
			return
		}
		m.counts[i.Name] = c
	}
	c.Add(ctx, i.Value, opt)
}
