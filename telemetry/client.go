package telemetry

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// clientMetrics holds the counts of one client, kept up to date by its
// hooks and read by the gauge callback. Attribute sets are made once per
// label set and reused.
type clientMetrics struct {
	inst   *instruments
	target attribute.KeyValue

	// notifications is read without mu: watcher callbacks are counted with
	// atomics on the client's lanes (a goroutine per xDS server).
	notifications atomic.Pointer[map[string]*notificationCounts]

	mu          sync.Mutex
	closed      bool
	remove      func()
	servers     map[string]*serverSeries
	resources   map[resourceKey]*countSeries
	authorities map[string]*authoritySeries
	pending     map[fetchKey]*fetch
	// born are the counter series made under mu, created at zero by
	// unlock.
	born []zero
}

type fetchKey struct {
	typeURL, name string
}

// fetch is a subscription waiting for its first answer.
type fetch struct {
	start   time.Time
	server  string
	stopped bool // the timer stopped with no state change yet
	stopAt  time.Time
}

func newClientMetrics(inst *instruments, target string) *clientMetrics {
	cm := &clientMetrics{
		inst:        inst,
		target:      attribute.String(KeyTarget, target),
		servers:     map[string]*serverSeries{},
		resources:   map[resourceKey]*countSeries{},
		authorities: map[string]*authoritySeries{},
		pending:     map[fetchKey]*fetch{},
	}
	empty := map[string]*notificationCounts{}
	cm.notifications.Store(&empty)
	return cm
}

// hooks returns the hooks that feed cm.
func (cm *clientMetrics) hooks() *xdsclient.Hooks {
	return &xdsclient.Hooks{
		ConnectivityChanged:    cm.connectivityChanged,
		ConnectedChanged:       cm.connectedChanged,
		ServerFailure:          cm.serverFailure,
		StreamStarted:          cm.streamStarted,
		StreamEnded:            cm.streamEnded,
		StreamStartFailed:      cm.streamStartFailed,
		ChannelClosed:          cm.channelClosed,
		ResponseReceived:       cm.responseReceived,
		CacheStateChanged:      cm.cacheStateChanged,
		WatcherNotified:        cm.watcherNotified,
		AuthorityServerChanged: cm.authorityServerChanged,
		ResourceTimerStarted:   cm.timerStarted,
		ResourceTimerStopped:   cm.timerStopped,

		LoadReportStreamStarted: cm.lrsStreamStarted,
		LoadReportStreamEnded:   cm.lrsStreamEnded,
		LoadReportSent:          cm.lrsReportSent,
	}
}

func (cm *clientMetrics) setRemove(remove func()) {
	cm.mu.Lock()
	if cm.closed {
		cm.mu.Unlock()
		remove()
		return
	}
	cm.remove = remove
	cm.mu.Unlock()
}

// close detaches the hooks. Hook calls the client had already queued find
// cm closed and do nothing.
func (cm *clientMetrics) close() {
	cm.mu.Lock()
	cm.closed = true
	remove := cm.remove
	cm.remove = nil
	cm.mu.Unlock()
	if remove != nil {
		remove()
	}
}

func resourceType(typeURL string) string {
	return strings.TrimPrefix(typeURL, xdsresource.TypeURLPrefix)
}

// connectivityChanged makes a server's connected series exist, at 0, from
// the moment the client has a channel to it, so that a server never reached
// reads 0 rather than nothing (gRFC A78); its counter series are made then
// too, at 0.
func (cm *clientMetrics) connectivityChanged(i xdsclient.ConnectivityInfo) {
	cm.mu.Lock()
	defer cm.unlock()
	if !cm.closed {
		cm.server(i.Server).known = true
	}
}

func (cm *clientMetrics) connectedChanged(i xdsclient.ConnectedInfo) {
	cm.mu.Lock()
	defer cm.unlock()
	if cm.closed {
		return
	}
	s := cm.server(i.Server)
	s.known = true
	s.connected = 0
	if i.Connected {
		s.connected = 1
	}
}

// channelClosed drops the server's connected series: the client no longer
// has a channel to it (gRFC A78 reports the channels that exist).
func (cm *clientMetrics) channelClosed(i xdsclient.ChannelInfo) {
	cm.mu.Lock()
	defer cm.unlock()
	if s := cm.servers[i.Server]; s != nil && !cm.closed {
		s.known = false
		s.connected = 0
	}
}

// serverAttrs returns the target and server attributes of server, false
// once cm is closed.
func (cm *clientMetrics) serverAttrs(server string) (metric.MeasurementOption, bool) {
	var attrs metric.MeasurementOption
	ok := cm.onServer(server, func(s *serverSeries) { attrs = s.attrs })
	return attrs, ok
}

func (cm *clientMetrics) serverFailure(i xdsclient.ServerFailureInfo) {
	if attrs, ok := cm.serverAttrs(i.Server); ok {
		cm.inst.serverFailure.Add(context.Background(), 1, attrs)
	}
}

func (cm *clientMetrics) streamStarted(i xdsclient.StreamInfo) {
	if attrs, ok := cm.serverAttrs(i.Server); ok {
		cm.inst.streamsStarted.Add(context.Background(), 1, attrs)
	}
}

// streamEnded counts the end, and closes as interrupted the fetches on
// that server whose timer stopped without an answer.
func (cm *clientMetrics) streamEnded(i xdsclient.StreamEndInfo) {
	cm.mu.Lock()
	if cm.closed {
		cm.unlock()
		return
	}
	attrs := cm.server(i.Server).endedAttrs(i.ResponseReceived)
	var done []record
	for k, f := range cm.pending {
		if f.stopped && f.server == i.Server {
			done = append(done, record{f.stopAt.Sub(f.start), cm.serverType(f.server, k.typeURL).outcomes[OutcomeInterrupted]})
			delete(cm.pending, k)
		}
	}
	cm.unlock()
	cm.inst.streamsEnded.Add(context.Background(), 1, attrs)
	cm.recordFetches(done...)
}

// streamStartFailed counts a stream that could not be created: it never
// started, so it is not an end either, and streams_started minus
// streams_ended stays the number of open streams.
func (cm *clientMetrics) streamStartFailed(i xdsclient.StreamEndInfo) {
	if attrs, ok := cm.serverAttrs(i.Server); ok {
		cm.inst.streamsStartFailed.Add(context.Background(), 1, attrs)
	}
}

// record is one fetch that ended: its duration and its attributes
// (target, server, resource type, outcome).
type record struct {
	d     time.Duration
	attrs metric.MeasurementOption
}

// recordFetches records each fetch of rs in the duration histogram and
// counts it by outcome.
func (cm *clientMetrics) recordFetches(rs ...record) {
	ctx := context.Background()
	for _, r := range rs {
		if r.attrs != nil {
			cm.inst.fetch.Record(ctx, r.d.Seconds(), r.attrs)
			cm.inst.fetches.Add(ctx, 1, r.attrs)
		}
	}
}

func (cm *clientMetrics) responseReceived(i xdsclient.ResponseInfo) {
	cm.mu.Lock()
	if cm.closed {
		cm.unlock()
		return
	}
	attrs := cm.serverType(i.Server, i.TypeURL).attrs
	cm.unlock()
	// Both counters are added to, zero included; their series exist
	// already, at zero, from the type's first watch on the server.
	ctx := context.Background()
	cm.inst.valid.Add(ctx, int64(i.Valid), attrs)
	cm.inst.invalid.Add(ctx, int64(i.Invalid), attrs)
}

// cacheStateChanged moves one entry between label sets of the resources
// gauge, and ends the fetch of an entry that leaves REQUESTED.
func (cm *clientMetrics) cacheStateChanged(i xdsclient.CacheStateInfo) {
	cm.mu.Lock()
	if cm.closed {
		cm.unlock()
		return
	}
	if i.Old != xdsclient.StateNone {
		cm.count(i.Authority, i.TypeURL, i.Old.MetricLabel(i.OldCached)).n--
	} else {
		// A new entry: the type is watched, so the series of its
		// notifications, and of its updates and fetches on the server it
		// is subscribed on, exist from now on.
		cm.notificationType(i.TypeURL)
		if i.Server != "" {
			cm.serverType(i.Server, i.TypeURL)
		}
	}
	if i.New != xdsclient.StateNone {
		cm.count(i.Authority, i.TypeURL, i.New.MetricLabel(i.NewCached)).n++
	}
	var r record
	if i.Old == xdsclient.StateRequested && len(cm.pending) > 0 {
		k := fetchKey{i.TypeURL, i.Name}
		if f := cm.pending[k]; f != nil {
			delete(cm.pending, k)
			if outcome := outcomeOf(i.New); outcome != "" {
				// The server that answered: after a switch back (gRFC
				// A71) it is not the one the fetch started on.
				server := i.Server
				if server == "" {
					server = f.server
				}
				r = record{eventTime(i.At).Sub(f.start), cm.serverType(server, i.TypeURL).outcomes[outcome]}
			}
		}
	}
	cm.unlock()
	cm.recordFetches(r)
}

// outcomeOf is the fetch outcome of leaving REQUESTED for state; "" when
// the entry was removed (the watch was cancelled), which is not recorded.
func outcomeOf(state xdsclient.CacheState) string {
	switch state {
	case xdsclient.StateACKed:
		return OutcomeACKed
	case xdsclient.StateNACKed:
		return OutcomeNACKed
	case xdsclient.StateReceivedError:
		return OutcomeReceivedError
	case xdsclient.StateDoesNotExist:
		return OutcomeDoesNotExist
	case xdsclient.StateTimeout:
		return OutcomeTimeout
	}
	return ""
}

func (cm *clientMetrics) authorityServerChanged(i xdsclient.AuthorityServerInfo) {
	cm.mu.Lock()
	defer cm.unlock()
	if cm.closed {
		return
	}
	if i.Server == "" {
		delete(cm.authorities, i.Authority) // released
		return
	}
	if a := cm.authorities[i.Authority]; a != nil && a.server == i.Server {
		return
	}
	cm.authorities[i.Authority] = &authoritySeries{
		server: i.Server,
		attrs: set(cm.target, attribute.String(KeyAuthority, i.Authority), attribute.String(KeyServer, i.Server),
			attribute.Int(KeyPriority, i.Priority)),
	}
}

// timerStarted starts a fetch: the does-not-exist timer starts exactly
// when a subscription of an entry with nothing received has gone out on a
// READY stream. A fetch whose timer had stopped without an answer is
// closed as interrupted first.
func (cm *clientMetrics) timerStarted(i xdsclient.ResourceTimerInfo) {
	now := eventTime(i.At)
	cm.mu.Lock()
	if cm.closed {
		cm.unlock()
		return
	}
	k := fetchKey{i.TypeURL, i.Name}
	var r record
	if f := cm.pending[k]; f != nil && f.stopped {
		r = record{f.stopAt.Sub(f.start), cm.serverType(f.server, k.typeURL).outcomes[OutcomeInterrupted]}
	}
	cm.serverType(i.Server, i.TypeURL)
	cm.pending[k] = &fetch{start: now, server: i.Server}
	cm.unlock()
	cm.recordFetches(r)
}

// timerStopped marks a fetch stopped. What stopped it comes next: a state
// change (an answer, or the entry's removal) or the end of the stream.
func (cm *clientMetrics) timerStopped(i xdsclient.ResourceTimerInfo) {
	now := eventTime(i.At)
	cm.mu.Lock()
	defer cm.unlock()
	if cm.closed {
		return
	}
	if f := cm.pending[fetchKey{i.TypeURL, i.Name}]; f != nil && !f.stopped {
		f.stopped, f.stopAt = true, now
	}
}

// watcherNotified counts a watcher callback. It runs on one of the
// client's lanes, once per callback, and takes no lock once the resource
// type has been seen.
func (cm *clientMetrics) watcherNotified(i xdsclient.NotificationInfo) {
	k := int(i.Kind)
	if k <= 0 || k >= 4 {
		return
	}
	nc := (*cm.notifications.Load())[i.TypeURL]
	if nc == nil {
		cm.mu.Lock()
		nc = cm.notificationType(i.TypeURL)
		cm.mu.Unlock()
	}
	nc.n[k].Add(1)
}

// observe reports the observable instruments' values: one observation per
// label set.
func (cm *clientMetrics) observe(o metric.Observer) {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	if cm.closed {
		return
	}
	for _, s := range cm.servers {
		if s.known {
			o.ObserveInt64(cm.inst.connected, s.connected, s.attrs)
		}
	}
	for _, s := range cm.resources {
		if s.n != 0 {
			o.ObserveInt64(cm.inst.resources, s.n, s.attrs)
		}
	}
	for _, a := range cm.authorities {
		o.ObserveInt64(cm.inst.authority, 1, a.attrs)
	}
	for _, nc := range *cm.notifications.Load() {
		for k := 1; k < 4; k++ {
			o.ObserveInt64(cm.inst.notifications, nc.n[k].Load(), nc.attrs[k])
		}
	}
}

// eventTime is the time of a hook's event: at, or now for hook calls that
// do not say (hand-made ones in tests of other sources).
func eventTime(at time.Time) time.Time {
	if at.IsZero() {
		return time.Now()
	}
	return at
}
