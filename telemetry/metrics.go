package telemetry

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/metric"

	"github.com/xdslens/xdslens/xdsclient"
)

// ScopeName is the instrumentation scope of the instruments (the
// otel_scope_name label in Prometheus).
const ScopeName = "github.com/xdslens/xdslens/telemetry"

// Metrics turns the hooks of a client, or of every client of a pool, into
// OpenTelemetry instruments. It is safe for concurrent use. Close it to
// detach it.
type Metrics struct {
	inst instruments
	reg  metric.Registration

	mu       sync.Mutex
	closed   bool
	all      map[*clientMetrics]struct{}
	byClient map[*xdsclient.Client]*clientMetrics
	stop     func() // stops a pool's observation

	// closeDone is closed once the work of Close is over; closeErr is set
	// before that, and closeStep tells what that work waits for now.
	closeDone chan struct{}
	closeErr  error
	closeStep atomic.Int32
}

// instruments are created once, in New.
type instruments struct {
	connected      metric.Int64ObservableGauge
	serverFailure  metric.Int64Counter
	valid          metric.Int64Counter
	invalid        metric.Int64Counter
	resources      metric.Int64ObservableGauge
	fetch          metric.Float64Histogram
	authority      metric.Int64ObservableGauge
	notifications  metric.Int64ObservableCounter
	fetches        metric.Int64Counter
	streamsStarted metric.Int64Counter
	streamsEnded   metric.Int64Counter

	streamsStartFailed metric.Int64Counter

	lrsStreamsStarted     metric.Int64Counter
	lrsStreamsStartFailed metric.Int64Counter
	lrsStreamsEnded       metric.Int64Counter
	lrsStreamFailures     metric.Int64Counter
	lrsReports            metric.Int64Counter
	lrsCalls              metric.Int64Counter
}

// New creates the instruments from the configured MeterProvider and
// attaches hooks to the clients of src (xdsclient.Source.Observe):
//
//   - a *xdsclient.Client is observed until Close, starting from its
//     current state (the client replays it to hooks added late);
//   - a *xdsclient.Pool: every client it holds now and every client it
//     makes later gets the hooks, and the series of a client the pool
//     closes (its grpc.target) go away.
//
// Nothing but the client's hooks feeds the instruments. The gauges read
// counts that the hooks keep, so a collection costs time in the number of
// label sets, not in the number of cached resources.
func New(src xdsclient.Source, opts ...Option) (*Metrics, error) {
	if src == nil || reflect.ValueOf(src).Kind() == reflect.Pointer && reflect.ValueOf(src).IsNil() {
		return nil, fmt.Errorf("telemetry: nil source (%T)", src)
	}
	cfg := newConfig(opts)
	m, err := newMetrics(cfg.mp)
	if err != nil {
		return nil, err
	}
	stop := src.Observe(m.attach, m.detach)
	m.mu.Lock()
	m.stop = stop
	m.mu.Unlock()
	return m, nil
}

func newMetrics(mp metric.MeterProvider) (*Metrics, error) {
	meter := mp.Meter(ScopeName, metric.WithInstrumentationVersion(xdsclient.Version))
	m := &Metrics{all: map[*clientMetrics]struct{}{}, byClient: map[*xdsclient.Client]*clientMetrics{}, closeDone: make(chan struct{})}
	var errs []error
	check := func(name string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	var err error
	in := &m.inst
	in.connected, err = meter.Int64ObservableGauge(MetricConnected, metric.WithDescription(descConnected), metric.WithUnit("{bool}"))
	check(MetricConnected, err)
	in.serverFailure, err = meter.Int64Counter(MetricServerFailure, metric.WithDescription(descServerFailure), metric.WithUnit("{failure}"))
	check(MetricServerFailure, err)
	in.valid, err = meter.Int64Counter(MetricResourceUpdatesValid, metric.WithDescription(descValid), metric.WithUnit("{resource}"))
	check(MetricResourceUpdatesValid, err)
	in.invalid, err = meter.Int64Counter(MetricResourceUpdatesInvalid, metric.WithDescription(descInvalid), metric.WithUnit("{resource}"))
	check(MetricResourceUpdatesInvalid, err)
	in.resources, err = meter.Int64ObservableGauge(MetricResources, metric.WithDescription(descResources), metric.WithUnit("{resource}"))
	check(MetricResources, err)
	in.fetch, err = meter.Float64Histogram(MetricResourceFetchDuration, metric.WithDescription(descFetchDuration), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(fetchBuckets...))
	check(MetricResourceFetchDuration, err)
	in.fetches, err = meter.Int64Counter(MetricResourceFetches, metric.WithDescription(descFetches), metric.WithUnit("{fetch}"))
	check(MetricResourceFetches, err)
	in.authority, err = meter.Int64ObservableGauge(MetricAuthorityServer, metric.WithDescription(descAuthority), metric.WithUnit("{server}"))
	check(MetricAuthorityServer, err)
	in.notifications, err = meter.Int64ObservableCounter(MetricWatcherNotifications, metric.WithDescription(descNotifications), metric.WithUnit("{notification}"))
	check(MetricWatcherNotifications, err)
	in.streamsStarted, err = meter.Int64Counter(MetricStreamsStarted, metric.WithDescription(descStreamsStarted), metric.WithUnit("{stream}"))
	check(MetricStreamsStarted, err)
	in.streamsEnded, err = meter.Int64Counter(MetricStreamsEnded, metric.WithDescription(descStreamsEnded), metric.WithUnit("{stream}"))
	check(MetricStreamsEnded, err)
	in.streamsStartFailed, err = meter.Int64Counter(MetricStreamsStartFailed, metric.WithDescription(descStreamsStartFailed), metric.WithUnit("{stream}"))
	check(MetricStreamsStartFailed, err)
	in.lrsStreamsStarted, err = meter.Int64Counter(MetricLRSStreamsStarted, metric.WithDescription(descLRSStreamsStarted), metric.WithUnit("{stream}"))
	check(MetricLRSStreamsStarted, err)
	in.lrsStreamsStartFailed, err = meter.Int64Counter(MetricLRSStreamsStartFailed, metric.WithDescription(descLRSStreamsStartFailed), metric.WithUnit("{stream}"))
	check(MetricLRSStreamsStartFailed, err)
	in.lrsStreamsEnded, err = meter.Int64Counter(MetricLRSStreamsEnded, metric.WithDescription(descLRSStreamsEnded), metric.WithUnit("{stream}"))
	check(MetricLRSStreamsEnded, err)
	in.lrsStreamFailures, err = meter.Int64Counter(MetricLRSStreamFailures, metric.WithDescription(descLRSFailures), metric.WithUnit("{failure}"))
	check(MetricLRSStreamFailures, err)
	in.lrsReports, err = meter.Int64Counter(MetricLRSReports, metric.WithDescription(descLRSReports), metric.WithUnit("{report}"))
	check(MetricLRSReports, err)
	in.lrsCalls, err = meter.Int64Counter(MetricLRSCalls, metric.WithDescription(descLRSCalls), metric.WithUnit("{call}"))
	check(MetricLRSCalls, err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("telemetry: creating instruments: %w", err)
	}
	m.reg, err = meter.RegisterCallback(m.observe, in.connected, in.resources, in.authority, in.notifications)
	if err != nil {
		return nil, fmt.Errorf("telemetry: registering the gauge callback: %w", err)
	}
	return m, nil
}

// Close detaches the hooks from every client, stops observing the pool
// and unregisters the callback of the observable instruments: after it
// returns, no series of this Metrics is reported any more. It does not
// close the clients. Close may be called more than once; it returns the
// error of unregistering the callback, if any. It is Shutdown with no
// deadline.
func (m *Metrics) Close() error { return m.Shutdown(context.Background()) }

// Shutdown does what Close does, and waits for it to end until ctx is
// done, as the OpenTelemetry SDK's Shutdown does. What can make it wait is
// unregistering the callback of the observable instruments, which the SDK
// holds back while a collection of the MeterProvider is running its
// callbacks (a slow callback of another instrument, or an exporter that
// does not answer).
//
// What does not depend on ctx: from the moment Shutdown starts, no client
// is attached any more, hook calls the clients had already queued do
// nothing, and the gauges report nothing. When ctx is done first, Shutdown
// returns the context's error (wrapped, saying what it waits for) and the
// rest goes on: once the collection in progress ends, the callback is
// unregistered and the goroutine that waited for it ends. A later Close
// waits for that and returns its error; a later Shutdown waits again until
// its own ctx is done.
func (m *Metrics) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	if !m.closed {
		m.closed = true
		stop, all := m.stop, m.all
		m.all, m.byClient = nil, nil
		go m.detachAll(stop, all)
	}
	m.mu.Unlock()
	select {
	case <-m.closeDone:
		return m.closeErr
	default:
	}
	select {
	case <-m.closeDone:
		return m.closeErr
	case <-ctx.Done():
		return fmt.Errorf("telemetry: shutdown: %s: %w", shutdownSteps[m.closeStep.Load()], ctx.Err())
	}
}

// The steps of a shutdown, which Shutdown names when its context ends
// first.
const (
	shutdownDetach int32 = iota
	shutdownUnregister
)

var shutdownSteps = [...]string{
	shutdownDetach:     "detaching the hooks from the clients",
	shutdownUnregister: "unregistering the callback of the observable instruments, which waits for the collection in progress",
}

// detachAll ends the observation of a pool (stop) and of the clients of all,
// unregisters the callback of the observable instruments, and closes
// closeDone. It runs once, on a goroutine of its own.
func (m *Metrics) detachAll(stop func(), all map[*clientMetrics]struct{}) {
	defer close(m.closeDone)
	if stop != nil {
		stop()
	}
	for cm := range all {
		cm.close()
	}
	m.closeStep.Store(shutdownUnregister)
	if m.reg != nil {
		m.closeErr = m.reg.Unregister()
	}
}

// attach starts observing c. It may run under the pool's lock.
func (m *Metrics) attach(c *xdsclient.Client) {
	m.mu.Lock()
	if m.closed || m.byClient[c] != nil {
		m.mu.Unlock()
		return
	}
	cm := m.track(c.Target())
	m.byClient[c] = cm
	m.mu.Unlock()
	// The client replays its state to the new hooks, on this goroutine or
	// on the one draining the client's hooks.
	remove := c.AddHooks(cm.hooks())
	cm.setRemove(remove)
}

// detach stops observing c and drops its series.
func (m *Metrics) detach(c *xdsclient.Client) {
	m.mu.Lock()
	cm := m.byClient[c]
	if cm != nil {
		delete(m.byClient, c)
		delete(m.all, cm)
	}
	m.mu.Unlock()
	if cm != nil {
		cm.close()
	}
}

// track makes the counts of one client. m.mu is held.
func (m *Metrics) track(target string) *clientMetrics {
	cm := newClientMetrics(&m.inst, target)
	m.all[cm] = struct{}{}
	return cm
}

// observe is the callback of the observable instruments.
func (m *Metrics) observe(_ context.Context, o metric.Observer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for cm := range m.all {
		cm.observe(o)
	}
	return nil
}
