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
	meter                          metric.Meter
	disconnects, succeeded, failed metric.Int64Counter
	ejections, retries, faults     metric.Int64Counter
	ejected, odEndpoints           metric.Int64Gauge

	mu     sync.Mutex
	counts map[string]metric.Float64Counter   // gRPC's counters, by name
	histos map[string]metric.Float64Histogram // gRPC's histograms, by name
}

func newLBMetrics(c *instruments) *lbMetrics {
	m := &lbMetrics{meter: c.meter, counts: map[string]metric.Float64Counter{}, histos: map[string]metric.Float64Histogram{}}
	m.disconnects = c.counter(MetricPickFirstDisconnections, "{disconnection}", "Connections of the endpoint policies of xdslens channels that were READY and are not any more.")
	m.succeeded = c.counter(MetricPickFirstConnectionAttemptsSucceeded, "{attempt}", "Connection attempts of the endpoint policies of xdslens channels that succeeded.")
	m.failed = c.counter(MetricPickFirstConnectionAttemptsFailed, "{attempt}", "Connection attempts of the endpoint policies of xdslens channels that failed.")
	m.ejections = c.counter(MetricEjections, "{ejection}", "Endpoints ejected by outlier detection, by algorithm.")
	m.retries = c.counter(MetricRetries, "{attempt}", "Attempts made again under a route's retry_policy, by the code of the attempt that failed.")
	m.faults = c.counter(MetricFaults, "{fault}", "Faults the fault injection filter put on RPCs, by kind.")
	m.ejected = c.syncGauge(MetricEjectedEndpoints, "{endpoint}", "A cluster's endpoints ejected by outlier detection now.")
	m.odEndpoints = c.syncGauge(MetricOutlierEndpoints, "{endpoint}", "A cluster's endpoints under outlier detection.")
	return m
}

func lbAttrs(target, leaf, locality string) metric.MeasurementOption {
	return metric.WithAttributes(attribute.String(KeyTarget, target), attribute.String(KeyBackendService, leaf), attribute.String(KeyLocality, locality))
}

// connectionChanged counts what pick_first's metrics count. The three
// series of a cluster and locality are created together, at 0, so that
// the first increase of each shows in a rate.
func (m *lbMetrics) connectionChanged(i xdsgrpc.ConnectionInfo) {
	ctx, opt := context.Background(), lbAttrs(i.Target, i.Leaf, i.Locality)
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
	ctx, opt := context.Background(), lbAttrs(i.Target, i.Leaf, i.Locality)
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

// ejection counts an ejection, and sets the cluster's gauges.
func (m *lbMetrics) ejection(i xdsgrpc.EjectionInfo) {
	ctx := context.Background()
	cluster := metric.WithAttributes(attribute.String(KeyTarget, i.Target), attribute.String(KeyBackendService, i.Leaf))
	m.ejected.Record(ctx, int64(i.EjectedEndpoints), cluster)
	m.odEndpoints.Record(ctx, int64(i.Endpoints), cluster)
	if i.Ejected {
		m.ejections.Add(ctx, 1, metric.WithAttributes(attribute.String(KeyTarget, i.Target), attribute.String(KeyBackendService, i.Leaf), attribute.String(KeyAlgorithm, i.Algorithm)))
	}
}

// retried counts a retry.
func (m *lbMetrics) retried(i xdsgrpc.RetryInfo) {
	m.retries.Add(context.Background(), 1, metric.WithAttributes(attribute.String(KeyTarget, i.Target),
		attribute.String(KeyBackendService, i.Cluster), attribute.String(KeyStatus, StatusName(i.Code))))
}

// faulted counts a fault.
func (m *lbMetrics) faulted(i xdsgrpc.FaultInfo) {
	m.faults.Add(context.Background(), 1, metric.WithAttributes(attribute.String(KeyTarget, i.Target),
		attribute.String(KeyBackendService, i.Cluster), attribute.String(KeyFault, i.Action)))
}
