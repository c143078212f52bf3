// Package metrictest reads OpenTelemetry instruments in tests: it collects
// a ManualReader of the SDK and gives each metric's points by label set,
// rendered as text that a test can compare.
package metrictest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
)

// Collect reads every metric of r now.
func Collect(t testing.TB, r *sdkmetric.ManualReader) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("collect: %v", err)
	}
	return rm
}

// Find returns the metric called name, and whether it was there.
func Find(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// Labels renders an attribute set as "k=v,k=v" in key order.
func Labels(s attribute.Set) string {
	return s.Encoded(attribute.DefaultEncoder())
}

// Lbl renders key, value pairs as Labels does.
func Lbl(kv ...string) string {
	var kvs []attribute.KeyValue
	for i := 0; i+1 < len(kv); i += 2 {
		kvs = append(kvs, attribute.String(kv[i], kv[i+1]))
	}
	return Labels(attribute.NewSet(kvs...))
}

// Series returns the points of a metric by label set: the value of a
// gauge or sum, the count of a histogram. A missing metric has no series.
func Series(rm metricdata.ResourceMetrics, name string) map[string]float64 {
	out := map[string]float64{}
	m, ok := Find(rm, name)
	if !ok {
		return out
	}
	switch d := m.Data.(type) {
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			out[Labels(p.Attributes)] = float64(p.Value)
		}
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			out[Labels(p.Attributes)] = float64(p.Value)
		}
	case metricdata.Sum[float64]:
		for _, p := range d.DataPoints {
			out[Labels(p.Attributes)] = p.Value
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			out[Labels(p.Attributes)] = float64(p.Count)
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			out[Labels(p.Attributes)] = float64(p.Count)
		}
	}
	return out
}

// WaitSeries waits, woken by xdstest.Notify, until the series of metric
// name equal want exactly, and fails the test when ctx ends first.
func WaitSeries(t testing.TB, ctx context.Context, r *sdkmetric.ManualReader, name string, want map[string]float64) {
	t.Helper()
	var got map[string]float64
	ok := xdstest.Until(ctx, func() bool {
		got = Series(Collect(t, r), name)
		return Equal(got, want)
	})
	if !ok {
		t.Fatalf("%s:\n got  %s\n want %s", name, Show(got), Show(want))
	}
}

// Equal reports whether a and b hold the same series and values.
func Equal(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Show renders series in label order, for test messages.
func Show(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("{")
	for i, k := range keys {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %v", k, m[k])
	}
	b.WriteString("}")
	return b.String()
}
