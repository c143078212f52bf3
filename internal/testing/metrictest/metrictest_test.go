package metrictest_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/xdslens/xdslens/internal/testing/metrictest"
	"github.com/xdslens/xdslens/internal/testing/testmain"
)

// TestMain ends the test binary without the race detector's pause at exit.
func TestMain(m *testing.M) { testmain.Run(m) }

// TestSeries records on a real SDK and reads each kind of instrument back
// by label set.
func TestSeries(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	meter := mp.Meter("test")
	ctx := context.Background()
	at := metric.WithAttributes(attribute.String("k", "v"), attribute.String("a", "b"))
	ints, _ := meter.Int64Counter("ints")
	ints.Add(ctx, 2, at)
	floats, _ := meter.Float64Counter("floats")
	floats.Add(ctx, 1.5, at)
	histo, _ := meter.Float64Histogram("histo")
	histo.Record(ctx, 7, at)
	histo.Record(ctx, 9, at)
	sizes, _ := meter.Int64Histogram("sizes")
	sizes.Record(ctx, 100, at)
	gauge, _ := meter.Int64ObservableGauge("gauge", metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(4, at)
		return nil
	}))
	_ = gauge

	rm := metrictest.Collect(t, reader)
	key := metrictest.Lbl("k", "v", "a", "b")
	if key != "a=b,k=v" {
		t.Errorf("Lbl = %q, want the keys in order", key)
	}
	for name, want := range map[string]float64{"ints": 2, "floats": 1.5, "histo": 2, "sizes": 1, "gauge": 4} {
		if got := metrictest.Series(rm, name); !metrictest.Equal(got, map[string]float64{key: want}) {
			t.Errorf("Series(%s) = %s, want %v at %s", name, metrictest.Show(got), want, key)
		}
	}
	if got := metrictest.Series(rm, "missing"); len(got) != 0 {
		t.Errorf("a missing metric has series %s", metrictest.Show(got))
	}
	if metrictest.Equal(map[string]float64{"a": 1}, map[string]float64{"b": 1}) {
		t.Error("Equal says two different label sets are equal")
	}
}
