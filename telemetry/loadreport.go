package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/xdslens/xdslens/xdsclient"
)

// The values of the kind label of MetricLRSCalls.
const (
	CallsIssued    = "issued"
	CallsSucceeded = "succeeded"
	CallsErrored   = "errored"
	CallsDropped   = "dropped"
)

// lrsCallKinds are the kind values of MetricLRSCalls, in the order of
// serverSeries.lrsCalls.
var lrsCallKinds = [4]string{CallsIssued, CallsSucceeded, CallsErrored, CallsDropped}

// lrsCallAttrs returns the attributes of MetricLRSCalls for s, made
// once. cm.mu is held.
func (cm *clientMetrics) lrsCallAttrs(uri string, s *serverSeries) *[4]metric.MeasurementOption {
	if s.lrsCalls[0] == nil {
		srv := attribute.String(KeyServer, uri)
		for i, kind := range lrsCallKinds {
			s.lrsCalls[i] = set(cm.target, srv, attribute.String(KeyKind, kind))
		}
	}
	return &s.lrsCalls
}

// onServer runs f with the series of uri under cm.mu, and reports false,
// without running it, once cm is closed.
func (cm *clientMetrics) onServer(uri string, f func(s *serverSeries)) bool {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	if cm.closed {
		return false
	}
	f(cm.server(uri))
	return true
}

func (cm *clientMetrics) lrsStreamStarted(i xdsclient.LoadReportStreamInfo) {
	if attrs, ok := cm.serverAttrs(i.Server); ok {
		cm.inst.lrsStreamsStarted.Add(context.Background(), 1, attrs)
	}
}

func (cm *clientMetrics) lrsStreamEnded(i xdsclient.LoadReportStreamEndInfo) {
	var attrs metric.MeasurementOption
	if cm.onServer(i.Server, func(s *serverSeries) { attrs = s.endedAttrs(i.ResponseReceived) }) {
		cm.inst.lrsStreamsEnded.Add(context.Background(), 1, attrs)
	}
}

func (cm *clientMetrics) lrsReportSent(i xdsclient.LoadReportInfo) {
	var attrs metric.MeasurementOption
	var calls *[4]metric.MeasurementOption
	if !cm.onServer(i.Server, func(s *serverSeries) { attrs, calls = s.attrs, cm.lrsCallAttrs(i.Server, s) }) {
		return
	}
	ctx := context.Background()
	cm.inst.lrsReports.Add(ctx, 1, attrs)
	for k, n := range [4]uint64{i.Issued, i.Succeeded, i.Errored, i.Dropped} {
		if n > 0 {
			cm.inst.lrsCalls.Add(ctx, int64(n), calls[k])
		}
	}
}
