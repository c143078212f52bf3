package telemetry

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// The data-plane instruments, fed by the hooks of an xdsgrpc.Builder
// (NewDataPlane).
const (
	// MetricDataPlanePicks is an Int64Counter, unit {pick}, labels
	// grpc.target, grpc.lb.backend_service (the cluster the route chose,
	// "" when none was) and outcome (sent, no_route, unsupported_action,
	// cluster_error, dropped, overloaded, no_endpoint, config_error): the
	// outcome of every pick that did not wait for a connection.
	MetricDataPlanePicks = "xdslens.data_plane.picks"
	// MetricDataPlaneCalls is an Int64Counter, unit {call}, labels
	// grpc.target, grpc.lb.backend_service, xdslens.leaf_cluster (the EDS
	// or LOGICAL_DNS cluster of the endpoint) and grpc.status (the code's
	// name as gRPC's own metrics give it, gRFC A66: OK, UNAVAILABLE,
	// DEADLINE_EXCEEDED...): RPCs sent to an endpoint, counted when they
	// end.
	MetricDataPlaneCalls = "xdslens.data_plane.calls"
	// MetricDataPlaneDrops is an Int64Counter, unit {call}, labels
	// grpc.target, xdslens.leaf_cluster and category: RPCs dropped by a
	// drop_overloads category of the cluster's endpoints. Its series exist,
	// at zero, from the first config that has the category.
	MetricDataPlaneDrops = "xdslens.data_plane.drops"
	// MetricDataPlaneConfigs is an Int64Counter, unit {config}, labels
	// grpc.target and result (config, error): configs the channels of the
	// target took, and failures of their whole config.
	MetricDataPlaneConfigs = "xdslens.data_plane.config_updates"
	// MetricDataPlaneInFlight is an Int64ObservableGauge, unit {call},
	// labels grpc.target, xdslens.leaf_cluster and xdslens.eds_service: the
	// RPCs in flight that count against the cluster's max_requests. The
	// counters are shared by the channels of one xDS client, so grpc.target
	// is the target of that client in the pool: the channel's own target,
	// or the one xdsgrpc.WithPoolTarget names.
	MetricDataPlaneInFlight = "xdslens.data_plane.in_flight"
	// MetricDataPlaneMaxRequests is an Int64ObservableGauge, unit {call},
	// with the labels of MetricDataPlaneInFlight: the cluster's
	// max_requests (circuit breaking, gRFC A32).
	MetricDataPlaneMaxRequests = "xdslens.data_plane.max_requests"
)

// Labels of the data-plane instruments.
const (
	// KeyBackendService is the cluster, as gRPC's own per-call metrics
	// name it (gRFC A89).
	KeyBackendService = "grpc.lb.backend_service"
	KeyLeafCluster    = "xdslens.leaf_cluster"
	KeyEDSService     = "xdslens.eds_service"
	KeyCategory       = "category"
	KeyStatus         = "grpc.status"
	KeyResult         = "result"
)

// DataPlane turns the hooks of an xdsgrpc.Builder into OpenTelemetry
// instruments: picks by cluster and outcome, RPCs by cluster and status,
// drops by category, config updates, and in-flight RPCs against
// max_requests. Its hooks cost a map lookup under a read lock per RPC once
// a label set has been seen. Close it to detach it.
type DataPlane struct {
	picks, calls, drops, configs metric.Int64Counter
	reg                          metric.Registration
	remove                       func()

	mu    sync.RWMutex
	attrs map[dataPlaneKey][]metric.AddOption // one per label set, ready to pass
}

// dataPlaneKey is one label set of a data-plane counter; kind tells the
// counter.
type dataPlaneKey struct {
	kind                        uint8
	target, cluster, leaf, last string
}

const (
	kindPick uint8 = iota
	kindCall
	kindDrop
	kindConfig
)

// NewDataPlane creates the data-plane instruments from the configured
// MeterProvider and adds hooks to b, which report every channel of b from
// then on.
func NewDataPlane(b *xdsgrpc.Builder, opts ...Option) (*DataPlane, error) {
	if b == nil {
		return nil, errors.New("telemetry: nil *xdsgrpc.Builder")
	}
	meter := newConfig(opts).mp.Meter(ScopeName, metric.WithInstrumentationVersion(xdsclient.Version))
	d := &DataPlane{attrs: map[dataPlaneKey][]metric.AddOption{}}
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		return c
	}
	d.picks = counter(MetricDataPlanePicks, "{pick}", "The outcome of every pick of an xdslens channel that did not wait for a connection.")
	d.calls = counter(MetricDataPlaneCalls, "{call}", "RPCs of xdslens channels sent to an endpoint, by the status they ended with.")
	d.drops = counter(MetricDataPlaneDrops, "{call}", "RPCs dropped by a drop_overloads category of the cluster's endpoints.")
	d.configs = counter(MetricDataPlaneConfigs, "{config}", "Configs the channels of a target took (result config) and failures of their whole config (result error).")
	inFlight, err := meter.Int64ObservableGauge(MetricDataPlaneInFlight, metric.WithUnit("{call}"),
		metric.WithDescription("RPCs in flight that count against the cluster's max_requests (circuit breaking)."))
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", MetricDataPlaneInFlight, err))
	}
	maxRequests, err := meter.Int64ObservableGauge(MetricDataPlaneMaxRequests, metric.WithUnit("{call}"),
		metric.WithDescription("The cluster's max_requests (circuit breaking)."))
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", MetricDataPlaneMaxRequests, err))
	}
	lb, err := newLBMetrics(meter)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	d.reg, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, c := range b.InFlight() {
			s := metric.WithAttributes(attribute.String(KeyTarget, c.Target), attribute.String(KeyLeafCluster, c.Cluster), attribute.String(KeyEDSService, c.EDSService))
			o.ObserveInt64(inFlight, c.InFlight, s)
			o.ObserveInt64(maxRequests, int64(c.MaxRequests), s)
		}
		return nil
	}, inFlight, maxRequests)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	d.remove = b.AddHooks(&xdsgrpc.Hooks{
		ChannelStarted:    d.channelStarted,
		ConfigChanged:     d.configChanged,
		ConfigFailed:      d.configFailed,
		Picked:            d.picked,
		CallFinished:      d.callFinished,
		LBMetric:          lb.lbMetric,
		ConnectionChanged: lb.connectionChanged,
		Ejection:          lb.ejection,
		Retried:           lb.retried,
		FaultInjected:     lb.faulted,
	})
	return d, nil
}

// Close removes the hooks and stops the gauges. It may be called more than
// once.
func (d *DataPlane) Close() {
	d.remove()
	d.reg.Unregister()
}

// attr returns the options of label set k, made once and passed as they
// are, so that adding to a counter allocates nothing.
func (d *DataPlane) attr(k dataPlaneKey) []metric.AddOption {
	d.mu.RLock()
	a, ok := d.attrs[k]
	d.mu.RUnlock()
	if ok {
		return a
	}
	kvs := []attribute.KeyValue{attribute.String(KeyTarget, k.target)}
	switch k.kind {
	case kindPick:
		kvs = append(kvs, attribute.String(KeyBackendService, k.cluster), attribute.String(KeyOutcome, k.last))
	case kindCall:
		kvs = append(kvs, attribute.String(KeyBackendService, k.cluster), attribute.String(KeyLeafCluster, k.leaf), attribute.String(KeyStatus, k.last))
	case kindDrop:
		kvs = append(kvs, attribute.String(KeyLeafCluster, k.leaf), attribute.String(KeyCategory, k.last))
	case kindConfig:
		kvs = append(kvs, attribute.String(KeyResult, k.last))
	}
	a = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(kvs...))}
	d.mu.Lock()
	d.attrs[k] = a
	d.mu.Unlock()
	return a
}

// bornOutcomes are the pick outcomes whose series exist, at zero, from a
// cluster's first config, so that the increase of a first one shows.
var bornOutcomes = []xdsgrpc.PickOutcome{xdsgrpc.PickSent, xdsgrpc.PickDropped, xdsgrpc.PickOverloaded, xdsgrpc.PickNoEndpoint, xdsgrpc.PickClusterError}

// channelStarted creates the config series of the channel's target at 0,
// so that the increase of its first config, or of its first failure,
// shows.
func (d *DataPlane) channelStarted(i xdsgrpc.ChannelInfo) {
	ctx := context.Background()
	d.configs.Add(ctx, 0, d.attr(dataPlaneKey{kind: kindConfig, target: i.Target, last: "config"})...)
	d.configs.Add(ctx, 0, d.attr(dataPlaneKey{kind: kindConfig, target: i.Target, last: "error"})...)
}

func (d *DataPlane) configChanged(i xdsgrpc.ConfigInfo) {
	ctx := context.Background()
	d.countConfig(i.Target, "config", "error")
	c := i.Config
	for name := range routedClusters(c) {
		for _, o := range bornOutcomes {
			d.picks.Add(ctx, 0, d.attr(dataPlaneKey{kind: kindPick, target: i.Target, cluster: name, last: o.String()})...)
		}
	}
	for name, cc := range c.Clusters {
		if cc.Endpoints == nil {
			continue
		}
		for _, drop := range cc.Endpoints.Drops {
			d.drops.Add(ctx, 0, d.attr(dataPlaneKey{kind: kindDrop, target: i.Target, leaf: name, last: drop.Category})...)
		}
	}
}

// routedClusters yields the clusters the routes of c's virtual host can
// choose, the names picks label RPCs with: the leaves of an aggregate
// cluster, which c.Clusters holds too, are not among them unless a route
// names them.
func routedClusters(c *xdsconfig.Config) iter.Seq[string] {
	return func(yield func(string) bool) {
		if c.VirtualHost == nil {
			return
		}
		for _, r := range c.VirtualHost.Routes {
			switch r.Action.Kind {
			case xdsresource.ActionCluster:
				if c.Clusters[r.Action.Cluster] != nil && !yield(r.Action.Cluster) {
					return
				}
			case xdsresource.ActionWeightedClusters:
				for _, w := range r.Action.WeightedClusters {
					if c.Clusters[w.Name] != nil && !yield(w.Name) {
						return
					}
				}
			}
		}
	}
}

func (d *DataPlane) configFailed(i xdsgrpc.ConfigErrorInfo) {
	d.countConfig(i.Target, "error", "config")
}

// countConfig counts a config update of target with result, and creates
// the other result's series at 0 if the channel started before the hooks
// were attached.
func (d *DataPlane) countConfig(target, result, other string) {
	ctx := context.Background()
	d.configs.Add(ctx, 0, d.attr(dataPlaneKey{kind: kindConfig, target: target, last: other})...)
	d.configs.Add(ctx, 1, d.attr(dataPlaneKey{kind: kindConfig, target: target, last: result})...)
}

func (d *DataPlane) picked(i xdsgrpc.PickInfo) {
	ctx := context.Background()
	d.picks.Add(ctx, 1, d.attr(dataPlaneKey{kind: kindPick, target: i.Target, cluster: i.Cluster, last: i.Outcome.String()})...)
	if i.Outcome == xdsgrpc.PickDropped {
		d.drops.Add(ctx, 1, d.attr(dataPlaneKey{kind: kindDrop, target: i.Target, leaf: i.Leaf, last: i.Category})...)
	}
}

func (d *DataPlane) callFinished(i xdsgrpc.CallEndInfo) {
	d.calls.Add(context.Background(), 1, d.attr(dataPlaneKey{kind: kindCall, target: i.Target, cluster: i.Cluster, leaf: i.Leaf, last: StatusName(status.Code(i.Err))})...)
}

// statusNames are the status codes as gRPC's own metrics label them
// (grpc.status of gRFC A66): the names of the codes in the gRPC spec.
var statusNames = [...]string{
	codes.OK:                 "OK",
	codes.Canceled:           "CANCELLED",
	codes.Unknown:            "UNKNOWN",
	codes.InvalidArgument:    "INVALID_ARGUMENT",
	codes.DeadlineExceeded:   "DEADLINE_EXCEEDED",
	codes.NotFound:           "NOT_FOUND",
	codes.AlreadyExists:      "ALREADY_EXISTS",
	codes.PermissionDenied:   "PERMISSION_DENIED",
	codes.ResourceExhausted:  "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION",
	codes.Aborted:            "ABORTED",
	codes.OutOfRange:         "OUT_OF_RANGE",
	codes.Unimplemented:      "UNIMPLEMENTED",
	codes.Internal:           "INTERNAL",
	codes.Unavailable:        "UNAVAILABLE",
	codes.DataLoss:           "DATA_LOSS",
	codes.Unauthenticated:    "UNAUTHENTICATED",
}

// StatusName returns the name of c as the grpc.status label of
// MetricDataPlaneCalls gives it, and gRPC's own metrics (gRFC A66): the
// code's name in the gRPC spec, such as DEADLINE_EXCEEDED; a code outside
// gRPC's set as codes.Code prints it ("Code(42)").
func StatusName(c codes.Code) string {
	if int(c) < len(statusNames) {
		return statusNames[c]
	}
	return c.String()
}
