package telemetry

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/metric"

	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/lrs"
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

// onServer runs f with the series of uri under cm.mu, and reports false,
// without running it, once cm is closed.
func (cm *clientMetrics) onServer(uri string, f func(s *serverSeries)) bool {
	cm.mu.Lock()
	defer cm.unlock()
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

// lrsStreamEnded counts the end of a stream that was created, or, for an
// attempt that could not create one, a start failure, so that
// lrs_streams_started minus lrs_streams_ended is the number of open
// streams; and, for an attempt that failed before a response while the
// reporting was not stopped, a failure.
func (cm *clientMetrics) lrsStreamEnded(i xdsclient.LoadReportStreamEndInfo) {
	var attrs, server metric.MeasurementOption
	counter := cm.inst.lrsStreamsEnded
	if !cm.onServer(i.Server, func(s *serverSeries) {
		attrs, server = s.endedAttrs(i.ResponseReceived), s.attrs
		if !i.Created {
			attrs, counter = s.attrs, cm.inst.lrsStreamsStartFailed
		}
	}) {
		return
	}
	ctx := context.Background()
	counter.Add(ctx, 1, attrs)
	if !i.ResponseReceived && !errors.Is(i.Err, lrs.ErrStopped) {
		cm.inst.lrsStreamFailures.Add(ctx, 1, server)
	}
}

func (cm *clientMetrics) lrsReportSent(i xdsclient.LoadReportInfo) {
	var attrs metric.MeasurementOption
	var calls *[4]metric.MeasurementOption
	if !cm.onServer(i.Server, func(s *serverSeries) { attrs, calls = s.attrs, &s.lrsCalls }) {
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
