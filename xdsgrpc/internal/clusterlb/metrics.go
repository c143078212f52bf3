package clusterlb

import (
	"fmt"

	estats "google.golang.org/grpc/experimental/stats"

	"github.com/xdslens/xdslens/xdsclient/lrs"
)

// MetricInfo is one recording of a metric of gRPC's registry (gRFC A78)
// by an endpoint policy, such as weighted_round_robin's
// grpc.lb.wrr.endpoint_weights.
type MetricInfo struct {
	// Cluster is the route-level cluster; Leaf the leaf cluster whose
	// policy recorded; Locality the locality of the policy's endpoints,
	// zero for a policy over several localities.
	Cluster, Leaf string
	Locality      lrs.Locality
	// Descriptor describes the metric: its name, unit and kind.
	Descriptor *estats.MetricDescriptor
	// Value is the recorded value (an increment, for a counter).
	Value float64
}

// LocalityLabel is a locality as gRPC's metrics label it (gRFC A78's
// grpc.lb.locality): {region="r", zone="z", sub_zone="s"}.
func LocalityLabel(l lrs.Locality) string {
	return fmt.Sprintf("{region=%q, zone=%q, sub_zone=%q}", l.Region, l.Zone, l.SubZone)
}

// recorder is the MetricsRecorder an endpoint policy gets: it passes each
// recording on to the channel's recorder (gRPC's OpenTelemetry plugin, if
// the channel has one), with the labels gRPC-Go's policies cannot fill in
// on a channel whose policies are not gRPC-Go's own (grpc.lb.locality and
// grpc.lb.backend_service, gRFC A78 and A89), and reports it to the Metric
// hook.
type recorder struct {
	estats.UnimplementedMetricsRecorder
	next     estats.MetricsRecorder // nil when the channel has none
	hook     func(MetricInfo)       // nil when no one listens
	cluster  string
	leaf     string
	locality *lrs.Locality // nil over several localities
}

// newRecorder returns the recorder of the policies of leaf l, in front of
// next.
func newRecorder(next estats.MetricsRecorder, l *leaf) *recorder {
	return &recorder{next: next, hook: l.hooks.Metric, cluster: l.cluster, leaf: l.name}
}

// forLocality returns a recorder of r's leaf for the policy of one
// locality.
func (r *recorder) forLocality(id lrs.Locality) *recorder {
	c := *r
	c.locality = &id
	return &c
}

// labels fills in, in the labels of d, the locality and the backend
// service, when the policy left them empty.
func (r *recorder) labels(d *estats.MetricDescriptor, labels []string) []string {
	var out []string
	for i, name := range d.OptionalLabels {
		j := len(d.Labels) + i
		if j >= len(labels) || labels[j] != "" {
			continue
		}
		var v string
		switch name {
		case "grpc.lb.locality":
			if r.locality != nil {
				v = LocalityLabel(*r.locality)
			}
		case "grpc.lb.backend_service":
			v = r.leaf
		}
		if v != "" {
			if out == nil {
				out = append([]string(nil), labels...)
			}
			out[j] = v
		}
	}
	if out == nil {
		return labels
	}
	return out
}

func (r *recorder) report(d *estats.MetricDescriptor, v float64) {
	if r.hook == nil {
		return
	}
	info := MetricInfo{Cluster: r.cluster, Leaf: r.leaf, Descriptor: d, Value: v}
	if r.locality != nil {
		info.Locality = *r.locality
	}
	r.hook(info)
}

func (r *recorder) RecordInt64Count(h *estats.Int64CountHandle, incr int64, labels ...string) {
	d := h.Descriptor()
	if r.next != nil {
		r.next.RecordInt64Count(h, incr, r.labels(d, labels)...)
	}
	r.report(d, float64(incr))
}

func (r *recorder) RecordFloat64Count(h *estats.Float64CountHandle, incr float64, labels ...string) {
	d := h.Descriptor()
	if r.next != nil {
		r.next.RecordFloat64Count(h, incr, r.labels(d, labels)...)
	}
	r.report(d, incr)
}

func (r *recorder) RecordInt64Histo(h *estats.Int64HistoHandle, v int64, labels ...string) {
	d := h.Descriptor()
	if r.next != nil {
		r.next.RecordInt64Histo(h, v, r.labels(d, labels)...)
	}
	r.report(d, float64(v))
}

func (r *recorder) RecordFloat64Histo(h *estats.Float64HistoHandle, v float64, labels ...string) {
	d := h.Descriptor()
	if r.next != nil {
		r.next.RecordFloat64Histo(h, v, r.labels(d, labels)...)
	}
	r.report(d, v)
}

func (r *recorder) RecordInt64Gauge(h *estats.Int64GaugeHandle, v int64, labels ...string) {
	d := h.Descriptor()
	if r.next != nil {
		r.next.RecordInt64Gauge(h, v, r.labels(d, labels)...)
	}
	r.report(d, float64(v))
}

func (r *recorder) RecordInt64UpDownCount(h *estats.Int64UpDownCountHandle, v int64, labels ...string) {
	d := h.Descriptor()
	if r.next != nil {
		r.next.RecordInt64UpDownCount(h, v, r.labels(d, labels)...)
	}
	r.report(d, float64(v))
}

func (r *recorder) RegisterAsyncReporter(rep estats.AsyncMetricReporter, ds ...estats.AsyncMetric) func() {
	if r.next != nil {
		return r.next.RegisterAsyncReporter(rep, ds...)
	}
	return func() {}
}
