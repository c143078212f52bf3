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

// lrsCallAttrs returns the attributes of MetricLRSCalls for server, made
// once. cm.mu is held.
func (cm *clientMetrics) lrsCallAttrs(uri string) *[4]metric.MeasurementOption {
	s := cm.server(uri)
	if s.lrsCalls[0] == nil {
		srv := attribute.String(KeyServer, uri)
		for i, kind := range lrsCallKinds {
			s.lrsCalls[i] = set(cm.target, srv, attribute.String(KeyKind, kind))
		}
	}
	return &s.lrsCalls
}

func (cm *clientMetrics) lrsStreamStarted(i xdsclient.LoadReportStreamInfo) {
	if attrs, ok := cm.serverAttrs(i.Server); ok {
		cm.inst.lrsStreamsStarted.Add(context.Background(), 1, attrs)
	}
}

func (cm *clientMetrics) lrsStreamEnded(i xdsclient.LoadReportStreamEndInfo) {
	cm.mu.Lock()
	if cm.closed {
		cm.mu.Unlock()
		return
	}
	s := cm.server(i.Server)
	attrs := s.ended[0]
	if i.ResponseReceived {
		attrs = s.ended[1]
	}
	cm.mu.Unlock()
	cm.inst.lrsStreamsEnded.Add(context.Background(), 1, attrs)
}

func (cm *clientMetrics) lrsReportSent(i xdsclient.LoadReportInfo) {
	cm.mu.Lock()
	if cm.closed {
		cm.mu.Unlock()
		return
	}
	attrs := cm.server(i.Server).attrs
	calls := cm.lrsCallAttrs(i.Server)
	cm.mu.Unlock()
	ctx := context.Background()
	cm.inst.lrsReports.Add(ctx, 1, attrs)
	for k, n := range [4]uint64{i.Issued, i.Succeeded, i.Errored, i.Dropped} {
		if n > 0 {
			cm.inst.lrsCalls.Add(ctx, int64(n), calls[k])
		}
	}
}
