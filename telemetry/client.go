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
}

// serverSeries are the series of one xDS server.
type serverSeries struct {
	attrs     metric.MeasurementOption // target, server
	connected int64
	known     bool // the client has a channel to the server
	// failuresShown is set once the failure counter has its series.
	failuresShown bool
	types         map[string]*serverTypeSeries
	ended         [2]metric.MeasurementOption // target, server, response_received false/true
	lrsCalls      [4]metric.MeasurementOption // target, server, kind (lrsCallKinds), made on first use
}

// serverTypeSeries are the series of one server and resource type.
type serverTypeSeries struct {
	attrs    metric.MeasurementOption // target, server, resource_type
	outcomes map[string]metric.MeasurementOption
	set      attribute.Set
}

type resourceKey struct {
	authority, typeURL, state string
}

type countSeries struct {
	attrs metric.MeasurementOption
	n     int64
}

type authoritySeries struct {
	server string
	attrs  metric.MeasurementOption // target, authority, server
}

// notificationCounts counts the watcher callbacks of one resource type, by
// kind.
type notificationCounts struct {
	attrs [4]metric.MeasurementOption // by xdsclient.NotificationKind
	n     [4]atomic.Int64
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

func set(kvs ...attribute.KeyValue) metric.MeasurementOption {
	return metric.WithAttributeSet(attribute.NewSet(kvs...))
}

// server returns the series of server. cm.mu is held.
func (cm *clientMetrics) server(uri string) *serverSeries {
	s := cm.servers[uri]
	if s == nil {
		srv := attribute.String(KeyServer, uri)
		s = &serverSeries{attrs: set(cm.target, srv), types: map[string]*serverTypeSeries{}}
		s.ended[0] = set(cm.target, srv, attribute.String(KeyResponseReceived, "false"))
		s.ended[1] = set(cm.target, srv, attribute.String(KeyResponseReceived, "true"))
		cm.servers[uri] = s
	}
	return s
}

// endedAttrs returns the attributes of a stream end on the server.
func (s *serverSeries) endedAttrs(responseReceived bool) metric.MeasurementOption {
	if responseReceived {
		return s.ended[1]
	}
	return s.ended[0]
}

// serverType returns the series of server and typeURL. cm.mu is held.
func (cm *clientMetrics) serverType(uri, typeURL string) *serverTypeSeries {
	s := cm.server(uri)
	st := s.types[typeURL]
	if st == nil {
		st = &serverTypeSeries{outcomes: map[string]metric.MeasurementOption{}}
		st.set = attribute.NewSet(cm.target, attribute.String(KeyServer, uri), attribute.String(KeyResourceType, resourceType(typeURL)))
		st.attrs = metric.WithAttributeSet(st.set)
		s.types[typeURL] = st
	}
	return st
}

// outcome returns the attributes of a fetch outcome. cm.mu is held.
func (st *serverTypeSeries) outcome(outcome string) metric.MeasurementOption {
	o := st.outcomes[outcome]
	if o == nil {
		kvs := append(st.set.ToSlice(), attribute.String(KeyOutcome, outcome))
		o = set(kvs...)
		st.outcomes[outcome] = o
	}
	return o
}

// connectivityChanged makes a server's connected series exist, at 0, from
// the moment the client has a channel to it, so that a server never reached
// reads 0 rather than nothing (gRFC A78). The first time, it also creates
// the server's failure counter at 0, so that a query of its increase sees
// the first failure too (a counter series that appears at 1 has no
// increase).
func (cm *clientMetrics) connectivityChanged(i xdsclient.ConnectivityInfo) {
	cm.mu.Lock()
	if cm.closed {
		cm.mu.Unlock()
		return
	}
	s := cm.server(i.Server)
	first := !s.failuresShown
	s.known, s.failuresShown = true, true
	attrs := s.attrs
	cm.mu.Unlock()
	if first {
		cm.inst.serverFailure.Add(context.Background(), 0, attrs)
	}
}

func (cm *clientMetrics) connectedChanged(i xdsclient.ConnectedInfo) {
	cm.mu.Lock()
	defer cm.mu.Unlock()
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
	defer cm.mu.Unlock()
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
		cm.mu.Unlock()
		return
	}
	attrs := cm.server(i.Server).endedAttrs(i.ResponseReceived)
	var done []record
	for k, f := range cm.pending {
		if f.stopped && f.server == i.Server {
			done = append(done, record{f.stopAt.Sub(f.start), cm.serverType(f.server, k.typeURL).outcome(OutcomeInterrupted)})
			delete(cm.pending, k)
		}
	}
	cm.mu.Unlock()
	ctx := context.Background()
	cm.inst.streamsEnded.Add(ctx, 1, attrs)
	for _, r := range done {
		cm.inst.fetch.Record(ctx, r.d.Seconds(), r.attrs)
	}
}

type record struct {
	d     time.Duration
	attrs metric.MeasurementOption
}

func (cm *clientMetrics) responseReceived(i xdsclient.ResponseInfo) {
	cm.mu.Lock()
	if cm.closed {
		cm.mu.Unlock()
		return
	}
	attrs := cm.serverType(i.Server, i.TypeURL).attrs
	cm.mu.Unlock()
	// Both counters are added to, zero included, so that both series
	// exist from the first response of a type.
	ctx := context.Background()
	cm.inst.valid.Add(ctx, int64(i.Valid), attrs)
	cm.inst.invalid.Add(ctx, int64(i.Invalid), attrs)
}

// cacheStateChanged moves one entry between label sets of the resources
// gauge, and ends the fetch of an entry that leaves REQUESTED.
func (cm *clientMetrics) cacheStateChanged(i xdsclient.CacheStateInfo) {
	cm.mu.Lock()
	if cm.closed {
		cm.mu.Unlock()
		return
	}
	if i.Old != xdsclient.StateNone {
		cm.count(i.Authority, i.TypeURL, i.Old.MetricLabel(i.OldCached)).n--
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
				r = record{eventTime(i.At).Sub(f.start), cm.serverType(server, i.TypeURL).outcome(outcome)}
			}
		}
	}
	cm.mu.Unlock()
	if r.attrs != nil {
		cm.inst.fetch.Record(context.Background(), r.d.Seconds(), r.attrs)
	}
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

// count returns the series of one label set of the resources gauge. Series
// are kept when their count drops to zero (there are few label sets) and
// are not reported then. cm.mu is held.
func (cm *clientMetrics) count(authority, typeURL, state string) *countSeries {
	k := resourceKey{authority, typeURL, state}
	s := cm.resources[k]
	if s == nil {
		s = &countSeries{attrs: set(cm.target,
			attribute.String(KeyAuthority, authority),
			attribute.String(KeyCacheState, state),
			attribute.String(KeyResourceType, resourceType(typeURL)))}
		cm.resources[k] = s
	}
	return s
}

func (cm *clientMetrics) authorityServerChanged(i xdsclient.AuthorityServerInfo) {
	cm.mu.Lock()
	defer cm.mu.Unlock()
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
		cm.mu.Unlock()
		return
	}
	k := fetchKey{i.TypeURL, i.Name}
	var r record
	if f := cm.pending[k]; f != nil && f.stopped {
		r = record{f.stopAt.Sub(f.start), cm.serverType(f.server, k.typeURL).outcome(OutcomeInterrupted)}
	}
	cm.pending[k] = &fetch{start: now, server: i.Server}
	cm.mu.Unlock()
	if r.attrs != nil {
		cm.inst.fetch.Record(context.Background(), r.d.Seconds(), r.attrs)
	}
}

// timerStopped marks a fetch stopped. What stopped it comes next: a state
// change (an answer, or the entry's removal) or the end of the stream.
func (cm *clientMetrics) timerStopped(i xdsclient.ResourceTimerInfo) {
	now := eventTime(i.At)
	cm.mu.Lock()
	defer cm.mu.Unlock()
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
		nc = cm.addNotificationType(i.TypeURL)
	}
	nc.n[k].Add(1)
}

func (cm *clientMetrics) addNotificationType(typeURL string) *notificationCounts {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	old := *cm.notifications.Load()
	if nc := old[typeURL]; nc != nil {
		return nc
	}
	nc := &notificationCounts{}
	rt := attribute.String(KeyResourceType, resourceType(typeURL))
	for k := xdsclient.NotifyResource; k <= xdsclient.NotifyAmbientError; k++ {
		nc.attrs[k] = set(cm.target, rt, attribute.String(KeyKind, k.String()))
	}
	next := make(map[string]*notificationCounts, len(old)+1)
	for t, c := range old {
		next[t] = c
	}
	next[typeURL] = nc
	cm.notifications.Store(&next)
	return nc
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
			if n := nc.n[k].Load(); n > 0 {
				o.ObserveInt64(cm.inst.notifications, n, nc.attrs[k])
			}
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
