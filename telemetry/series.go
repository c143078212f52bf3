package telemetry

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/xdslens/xdslens/xdsclient"
)

// The series of one client, by label set. Every counter series is created
// at zero as soon as its label set is known: those of a server when the
// client is first seen to use it (its first channel), those of a server and
// resource type when a resource of the type is first watched there (or
// first heard of from it). A counter series that appears at its first
// event has no increase in Prometheus (increase() and rate() need two
// samples), so a one-off event would never show.

// serverSeries are the series of one xDS server.
type serverSeries struct {
	attrs     metric.MeasurementOption // target, server
	connected int64
	known     bool // the client has a channel to the server
	types     map[string]*serverTypeSeries
	ended     [2]metric.MeasurementOption // target, server, response_received false/true
	lrsCalls  [4]metric.MeasurementOption // target, server, kind (lrsCallKinds)
}

// serverTypeSeries are the series of one server and resource type.
type serverTypeSeries struct {
	attrs    metric.MeasurementOption // target, server, resource_type
	outcomes map[string]metric.MeasurementOption
}

// outcomes are the values of KeyOutcome.
var outcomes = []string{
	OutcomeACKed, OutcomeNACKed, OutcomeReceivedError, OutcomeDoesNotExist, OutcomeTimeout, OutcomeInterrupted,
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

// zero is a counter series to create at zero.
type zero struct {
	counter metric.Int64Counter
	attrs   metric.MeasurementOption
}

func set(kvs ...attribute.KeyValue) metric.MeasurementOption {
	return metric.WithAttributeSet(attribute.NewSet(kvs...))
}

// unlock releases cm.mu, then creates at zero the counter series that were
// made while it was held (the SDK is not called under cm.mu).
func (cm *clientMetrics) unlock() {
	born := cm.born
	cm.born = nil
	cm.mu.Unlock()
	ctx := context.Background()
	for _, z := range born {
		z.counter.Add(ctx, 0, z.attrs)
	}
}

// bear queues the creation at zero of counter's series attrs. cm.mu is
// held.
func (cm *clientMetrics) bear(counter metric.Int64Counter, attrs ...metric.MeasurementOption) {
	for _, a := range attrs {
		cm.born = append(cm.born, zero{counter, a})
	}
}

// server returns the series of server, made with every counter series of
// the server at zero the first time. cm.mu is held; release it with
// cm.unlock.
func (cm *clientMetrics) server(uri string) *serverSeries {
	s := cm.servers[uri]
	if s != nil {
		return s
	}
	srv := attribute.String(KeyServer, uri)
	s = &serverSeries{attrs: set(cm.target, srv), types: map[string]*serverTypeSeries{}}
	s.ended[0] = set(cm.target, srv, attribute.String(KeyResponseReceived, "false"))
	s.ended[1] = set(cm.target, srv, attribute.String(KeyResponseReceived, "true"))
	for i, kind := range lrsCallKinds {
		s.lrsCalls[i] = set(cm.target, srv, attribute.String(KeyKind, kind))
	}
	cm.servers[uri] = s
	in := cm.inst
	cm.bear(in.serverFailure, s.attrs)
	cm.bear(in.streamsStarted, s.attrs)
	cm.bear(in.streamsStartFailed, s.attrs)
	cm.bear(in.streamsEnded, s.ended[:]...)
	// gRPC's clients report load to the xDS server that sent the cluster
	// (lrs_server is "self"), so a server's load reporting series are made
	// with its other series.
	cm.bear(in.lrsStreamsStarted, s.attrs)
	cm.bear(in.lrsStreamsStartFailed, s.attrs)
	cm.bear(in.lrsStreamsEnded, s.ended[:]...)
	cm.bear(in.lrsStreamFailures, s.attrs)
	cm.bear(in.lrsReports, s.attrs)
	cm.bear(in.lrsCalls, s.lrsCalls[:]...)
	return s
}

// endedAttrs returns the attributes of a stream end on the server.
func (s *serverSeries) endedAttrs(responseReceived bool) metric.MeasurementOption {
	if responseReceived {
		return s.ended[1]
	}
	return s.ended[0]
}

// serverType returns the series of server and typeURL, made with their
// counter series at zero the first time. cm.mu is held; release it with
// cm.unlock.
func (cm *clientMetrics) serverType(uri, typeURL string) *serverTypeSeries {
	s := cm.server(uri)
	st := s.types[typeURL]
	if st != nil {
		return st
	}
	kvs := []attribute.KeyValue{cm.target, attribute.String(KeyServer, uri), attribute.String(KeyResourceType, resourceType(typeURL))}
	st = &serverTypeSeries{attrs: set(kvs...), outcomes: map[string]metric.MeasurementOption{}}
	for _, o := range outcomes {
		attrs := set(append(kvs, attribute.String(KeyOutcome, o))...)
		st.outcomes[o] = attrs
		cm.bear(cm.inst.fetches, attrs)
	}
	s.types[typeURL] = st
	cm.bear(cm.inst.valid, st.attrs)
	cm.bear(cm.inst.invalid, st.attrs)
	return st
}

// notificationType returns the watcher callback counts of typeURL, made
// the first time: the observable counter reports each kind of a type it
// knows, zero included. cm.mu is held.
func (cm *clientMetrics) notificationType(typeURL string) *notificationCounts {
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
