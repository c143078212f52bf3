package telemetry

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc/connectivity"

	"github.com/xdslens/xdslens/xdsgrpc"
)

// The load-balancing metrics of gRFC A78 that DataPlane records.
//
// weighted_round_robin's (grpc.lb.wrr.rr_fallback, ..._not_yet_usable,
// ..._stale and the grpc.lb.wrr.endpoint_weights histogram) are recorded
// by gRPC-Go's policy itself, with the names, units and labels gRPC
// registers; DataPlane turns them into instruments of the same names,
// labelled with grpc.target, grpc.lb.locality and
// grpc.lb.backend_service (the leaf cluster), which gRPC-Go's policies
// cannot fill in on channels whose policies are not its own.
//
// pick_first's are counted from the connections of every endpoint policy
// (each of them connects with pick_first): connection attempts that
// succeeded (CONNECTING to READY), that failed (CONNECTING to
// TRANSIENT_FAILURE) and disconnections (READY to anything else), with
// the same labels.
const (
	MetricPickFirstDisconnections              = "grpc.lb.pick_first.disconnections"
	MetricPickFirstConnectionAttemptsSucceeded = "grpc.lb.pick_first.connection_attempts_succeeded"
	MetricPickFirstConnectionAttemptsFailed    = "grpc.lb.pick_first.connection_attempts_failed"
	MetricWRRRRFallback                        = "grpc.lb.wrr.rr_fallback"
	MetricWRREndpointWeightNotYetUsable        = "grpc.lb.wrr.endpoint_weight_not_yet_usable"
	MetricWRREndpointWeightStale               = "grpc.lb.wrr.endpoint_weight_stale"
	MetricWRREndpointWeights                   = "grpc.lb.wrr.endpoint_weights"
	// MetricDataPlaneEjections is an Int64Counter, unit {ejection}:
	// endpoints ejected by outlier detection (gRFC A50), by grpc.target,
	// grpc.lb.backend_service (the leaf cluster) and KeyAlgorithm.
	MetricDataPlaneEjections = "xdslens.data_plane.ejections"
	// MetricDataPlaneEjectedEndpoints and MetricDataPlaneOutlierEndpoints
	// are Int64Gauges, unit {endpoint}: a leaf cluster's endpoints
	// ejected now, and those under outlier detection, as of its last
	// ejection or return; by grpc.target and grpc.lb.backend_service.
	MetricDataPlaneEjectedEndpoints = "xdslens.data_plane.ejected_endpoints"
	MetricDataPlaneOutlierEndpoints = "xdslens.data_plane.outlier_detection_endpoints"
	// KeyAlgorithm is the ejection algorithm: success_rate or
	// failure_percentage.
	KeyAlgorithm = "xdslens.algorithm"
	// MetricDataPlaneRetries is an Int64Counter, unit {attempt}: attempts
	// made again under a route's retry_policy (gRFC A44), by grpc.target,
	// grpc.lb.backend_service and grpc.status (the code of the attempt
	// that failed).
	MetricDataPlaneRetries = "xdslens.data_plane.retries"
	// MetricDataPlaneFaults is an Int64Counter, unit {fault}: faults the
	// fault injection filter put on RPCs (gRFC A33), by grpc.target,
	// grpc.lb.backend_service and KeyFault.
	MetricDataPlaneFaults = "xdslens.data_plane.faults"
	// KeyFault is the fault: delay or abort.
	KeyFault = "xdslens.fault"
	// KeyLocality is the locality label of gRFC A78:
	// {region="r", zone="z", sub_zone="s"}.
	KeyLocality = "grpc.lb.locality"
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

func newLBMetrics(meter metric.Meter) (*lbMetrics, error) {
	m := &lbMetrics{meter: meter, counts: map[string]metric.Float64Counter{}, histos: map[string]metric.Float64Histogram{}}
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		return c
	}
	m.disconnects = counter(MetricPickFirstDisconnections, "{disconnection}", "Connections of the endpoint policies of xdslens channels that were READY and are not any more.")
	m.succeeded = counter(MetricPickFirstConnectionAttemptsSucceeded, "{attempt}", "Connection attempts of the endpoint policies of xdslens channels that succeeded.")
	m.failed = counter(MetricPickFirstConnectionAttemptsFailed, "{attempt}", "Connection attempts of the endpoint policies of xdslens channels that failed.")
	m.ejections = counter(MetricDataPlaneEjections, "{ejection}", "Endpoints ejected by outlier detection, by algorithm.")
	m.retries = counter(MetricDataPlaneRetries, "{attempt}", "Attempts made again under a route's retry_policy, by the code of the attempt that failed.")
	m.faults = counter(MetricDataPlaneFaults, "{fault}", "Faults the fault injection filter put on RPCs, by kind.")
	gauge := func(name, desc string) metric.Int64Gauge {
		g, err := meter.Int64Gauge(name, metric.WithUnit("{endpoint}"), metric.WithDescription(desc))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		return g
	}
	m.ejected = gauge(MetricDataPlaneEjectedEndpoints, "A cluster's endpoints ejected by outlier detection now.")
	m.odEndpoints = gauge(MetricDataPlaneOutlierEndpoints, "A cluster's endpoints under outlier detection.")
	return m, errors.Join(errs...)
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
