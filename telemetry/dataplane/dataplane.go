package dataplane

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// Metrics turns the hooks of an xdsgrpc.Builder into OpenTelemetry
// instruments: picks by cluster and outcome, RPCs by cluster and status,
// drops by category, config updates, in-flight RPCs against
// max_requests, and the load-balancing metrics of the endpoint policies.
// Its hooks cost a map lookup under a read lock per RPC once a label set
// has been seen.
type Metrics struct {
	b                            *xdsgrpc.Builder
	picks, calls, drops, configs metric.Int64Counter
	lb                           *lbMetrics
	// register registers the callback of the circuit-breaker gauges.
	register func() (metric.Registration, error)
	remove   func()

	mu    sync.RWMutex
	attrs map[key][]metric.AddOption // one per label set, ready to pass

	// The gauges' callback is registered while gauges is set: from New
	// to Close, or, with WithMeterProvider, while the Builder has live
	// channels (live counts them), so that a Builder whose channels are
	// all closed is not held by the MeterProvider.
	gaugesMu sync.Mutex
	follow   bool
	live     int
	gauges   metric.Registration
}

// key is one label set of a counter; kind tells the counter. target is
// the xDS client's, channel the channel's own.
type key struct {
	kind                                 uint8
	target, channel, cluster, leaf, last string
}

const (
	kindPick uint8 = iota
	kindCall
	kindDrop
	kindConfig
)

// New creates the instruments from mp (otel.GetMeterProvider() when nil)
// and adds hooks to b, which report every channel of b from then on, until
// Close.
func New(b *xdsgrpc.Builder, mp metric.MeterProvider) (*Metrics, error) {
	if b == nil {
		return nil, errors.New("dataplane: nil *xdsgrpc.Builder")
	}
	m, err := newMetrics(b, mp)
	if err != nil {
		return nil, err
	}
	if m.gauges, err = m.register(); err != nil {
		return nil, fmt.Errorf("dataplane: %w", err)
	}
	m.remove = b.AddHooks(m.hooks())
	return m, nil
}

// WithMeterProvider returns an xdsgrpc.Option that measures every channel
// of the Builder that NewBuilder or DialOptions makes with it, with the
// instruments of mp (otel.GetMeterProvider() when nil). The circuit-breaker
// gauges are observed while the Builder has channels. An error creating
// the instruments (which the OpenTelemetry SDK gives only for invalid
// names or units) goes to otel.Handle, as OpenTelemetry reports errors it
// cannot return.
func WithMeterProvider(mp metric.MeterProvider) xdsgrpc.Option {
	return xdsgrpc.WithObserver(func(b *xdsgrpc.Builder) {
		m, err := newMetrics(b, mp)
		if err != nil {
			otel.Handle(err)
			return
		}
		m.follow = true
		m.remove = b.AddHooks(m.hooks())
	})
}

// newMetrics creates the instruments of b's channels from mp.
func newMetrics(b *xdsgrpc.Builder, mp metric.MeterProvider) (*Metrics, error) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	meter := mp.Meter(ScopeName, metric.WithInstrumentationVersion(xdsclient.Version))
	m := &Metrics{b: b, attrs: map[key][]metric.AddOption{}}
	c := &instruments{meter: meter}
	m.picks = c.counter(MetricPicks, "{pick}", "The outcome of every pick of an xdslens channel that did not wait for a connection.")
	m.calls = c.counter(MetricCalls, "{call}", "RPCs of xdslens channels sent to an endpoint, by the status they ended with.")
	m.drops = c.counter(MetricDrops, "{call}", "RPCs dropped by a drop_overloads category of the cluster's endpoints.")
	m.configs = c.counter(MetricConfigUpdates, "{config}", "Configs the channels of a target took (result config) and failures of their whole config (result error).")
	inFlight := c.gauge(MetricInFlight, "{call}", "RPCs in flight that count against the cluster's max_requests (circuit breaking).")
	maxRequests := c.gauge(MetricMaxRequests, "{call}", "The cluster's max_requests (circuit breaking).")
	m.lb = newLBMetrics(c, b.ClientTarget)
	if err := errors.Join(c.errs...); err != nil {
		return nil, fmt.Errorf("dataplane: %w", err)
	}
	m.register = func() (metric.Registration, error) {
		return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			for _, c := range b.InFlight() {
				s := metric.WithAttributes(attribute.String(KeyTarget, c.Target), attribute.String(KeyLeafCluster, c.Cluster), attribute.String(KeyEDSService, c.EDSService))
				o.ObserveInt64(inFlight, c.InFlight, s)
				o.ObserveInt64(maxRequests, int64(c.MaxRequests), s)
			}
			return nil
		}, inFlight, maxRequests)
	}
	return m, nil
}

// instruments creates instruments of meter, keeping the errors.
type instruments struct {
	meter metric.Meter
	errs  []error
}

func (c *instruments) counter(name, unit, desc string) metric.Int64Counter {
	i, err := c.meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	if err != nil {
		c.errs = append(c.errs, fmt.Errorf("%s: %w", name, err))
	}
	return i
}

func (c *instruments) syncGauge(name, unit, desc string) metric.Int64Gauge {
	i, err := c.meter.Int64Gauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
	if err != nil {
		c.errs = append(c.errs, fmt.Errorf("%s: %w", name, err))
	}
	return i
}

func (c *instruments) gauge(name, unit, desc string) metric.Int64ObservableGauge {
	i, err := c.meter.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
	if err != nil {
		c.errs = append(c.errs, fmt.Errorf("%s: %w", name, err))
	}
	return i
}

// hooks are the hooks that feed the instruments.
func (m *Metrics) hooks() *xdsgrpc.Hooks {
	return &xdsgrpc.Hooks{
		ChannelStarted:    m.channelStarted,
		ChannelClosed:     m.channelClosed,
		ConfigChanged:     m.configChanged,
		ConfigFailed:      m.configFailed,
		Picked:            m.picked,
		CallFinished:      m.callFinished,
		LBMetric:          m.lb.lbMetric,
		ConnectionChanged: m.lb.connectionChanged,
		Ejection:          m.lb.ejection,
		Retried:           m.lb.retried,
		FaultInjected:     m.lb.faulted,
	}
}

// Close removes the hooks and stops the gauges. It may be called more than
// once.
func (m *Metrics) Close() {
	m.remove()
	m.gaugesMu.Lock()
	defer m.gaugesMu.Unlock()
	m.follow = false
	if m.gauges != nil {
		m.gauges.Unregister()
		m.gauges = nil
	}
}

// attr returns the options of label set k, made once and passed as they
// are, so that adding to a counter allocates nothing.
func (m *Metrics) attr(k key) []metric.AddOption {
	m.mu.RLock()
	a, ok := m.attrs[k]
	m.mu.RUnlock()
	if ok {
		return a
	}
	kvs := []attribute.KeyValue{attribute.String(KeyTarget, k.target), attribute.String(KeyChannelTarget, k.channel)}
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
	m.mu.Lock()
	m.attrs[k] = a
	m.mu.Unlock()
	return a
}

// key returns the label set of a counter of kind for an event of the
// channel of target channel.
func (m *Metrics) key(kind uint8, channel, cluster, leaf, last string) key {
	return key{kind: kind, target: m.b.ClientTarget(channel), channel: channel, cluster: cluster, leaf: leaf, last: last}
}

// bornOutcomes are the pick outcomes whose series exist, at zero, from a
// cluster's first config, so that the increase of a first one shows.
var bornOutcomes = []xdsgrpc.PickOutcome{xdsgrpc.PickSent, xdsgrpc.PickDropped, xdsgrpc.PickOverloaded, xdsgrpc.PickNoEndpoint, xdsgrpc.PickClusterError}

// channelStarted creates the config series of the channel's target at 0,
// so that the increase of its first config, or of its first failure,
// shows; with WithMeterProvider, the first live channel starts the gauges.
func (m *Metrics) channelStarted(i xdsgrpc.ChannelInfo) {
	ctx := context.Background()
	m.configs.Add(ctx, 0, m.attr(m.key(kindConfig, i.Target, "", "", "config"))...)
	m.configs.Add(ctx, 0, m.attr(m.key(kindConfig, i.Target, "", "", "error"))...)
	m.gaugesMu.Lock()
	defer m.gaugesMu.Unlock()
	if !m.follow {
		return
	}
	if m.live++; m.live == 1 {
		reg, err := m.register()
		if err != nil {
			otel.Handle(fmt.Errorf("dataplane: %w", err))
			return
		}
		m.gauges = reg
	}
}

// channelClosed stops the gauges with the last live channel, with
// WithMeterProvider.
func (m *Metrics) channelClosed(xdsgrpc.ChannelInfo) {
	m.gaugesMu.Lock()
	defer m.gaugesMu.Unlock()
	if !m.follow {
		return
	}
	if m.live--; m.live == 0 && m.gauges != nil {
		m.gauges.Unregister()
		m.gauges = nil
	}
}

func (m *Metrics) configChanged(i xdsgrpc.ConfigInfo) {
	ctx := context.Background()
	m.countConfig(i.Target, "config", "error")
	c := i.Config
	for name := range routedClusters(c) {
		for _, o := range bornOutcomes {
			m.picks.Add(ctx, 0, m.attr(m.key(kindPick, i.Target, name, "", o.String()))...)
		}
	}
	for name, cc := range c.Clusters {
		if cc.Endpoints == nil {
			continue
		}
		for _, drop := range cc.Endpoints.Drops {
			m.drops.Add(ctx, 0, m.attr(m.key(kindDrop, i.Target, "", name, drop.Category))...)
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
			case routeconfig.ActionCluster:
				if c.Clusters[r.Action.Cluster] != nil && !yield(r.Action.Cluster) {
					return
				}
			case routeconfig.ActionWeightedClusters:
				for _, w := range r.Action.WeightedClusters {
					if c.Clusters[w.Name] != nil && !yield(w.Name) {
						return
					}
				}
			}
		}
	}
}

func (m *Metrics) configFailed(i xdsgrpc.ConfigErrorInfo) {
	m.countConfig(i.Target, "error", "config")
}

// countConfig counts a config update of target with result, and creates
// the other result's series at 0 if the channel started before the hooks
// were attached.
func (m *Metrics) countConfig(target, result, other string) {
	ctx := context.Background()
	m.configs.Add(ctx, 0, m.attr(m.key(kindConfig, target, "", "", other))...)
	m.configs.Add(ctx, 1, m.attr(m.key(kindConfig, target, "", "", result))...)
}

func (m *Metrics) picked(i xdsgrpc.PickInfo) {
	ctx := context.Background()
	m.picks.Add(ctx, 1, m.attr(m.key(kindPick, i.Target, i.Cluster, "", i.Outcome.String()))...)
	if i.Outcome == xdsgrpc.PickDropped {
		m.drops.Add(ctx, 1, m.attr(m.key(kindDrop, i.Target, "", i.Leaf, i.Category))...)
	}
}

func (m *Metrics) callFinished(i xdsgrpc.CallEndInfo) {
	m.calls.Add(context.Background(), 1, m.attr(m.key(kindCall, i.Target, i.Cluster, i.Leaf, StatusName(status.Code(i.Err))))...)
}
