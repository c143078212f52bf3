package telemetry_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"

	"github.com/xdslens/xdslens/telemetry"
)

// A collection that does not end (another instrument's callback blocks)
// holds back the unregistering of the gauges' callback: Shutdown returns
// its context's error, saying so, with the Metrics already detached; once
// the collection ends, the rest is done, Close returns, and nothing is
// left running.
func TestShutdownDeadlineWithCollectionBlocked(t *testing.T) {
	f := newFixture(t, nil)
	f.cached()

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	// The blocking callback is registered first: a collection holds the
	// SDK's lock while it waits in it, before it reaches the Metrics'.
	entered, release := make(chan struct{}), make(chan struct{})
	blocker := mp.Meter("test")
	gauge, err := blocker.Int64ObservableGauge("test.blocker")
	if err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool // the next collection blocks
	if _, err := blocker.RegisterCallback(func(context.Context, metric.Observer) error {
		if armed.CompareAndSwap(true, false) {
			close(entered)
			<-release
		}
		return nil
	}, gauge); err != nil {
		t.Fatal(err)
	}
	ignore := goleak.IgnoreCurrent()
	m, err := telemetry.New(f.c, telemetry.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	// m reports c1: the client replays its state to new hooks, then to
	// these, which wake the wait.
	defer f.c.AddHooks(notifyHooks())()
	waitSeries(t, f.Ctx, reader, telemetry.MetricResources, map[string]float64{resourcesLabels("acked"): 1})
	armed.Store(true)
	collected := make(chan metricdata.ResourceMetrics, 1)
	go func() {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Error(err)
		}
		collected <- rm
	}()
	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-f.Ctx.Done():
			t.Fatalf("%s: timed out", what)
		}
	}
	wait(entered, "the collection in the blocking callback")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- m.Shutdown(ctx) }()
	select {
	case err = <-shut:
	case <-f.Ctx.Done():
		t.Fatal("Shutdown did not return once its context was done")
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "collection in progress") {
		t.Fatalf("Shutdown during a blocked collection = %v, want the context's error naming the collection", err)
	}
	// Detached already: the Metrics' gauges report nothing in the
	// collection that was waiting.
	close(release)
	var rm metricdata.ResourceMetrics
	select {
	case rm = <-collected:
	case <-f.Ctx.Done():
		t.Fatal("the collection never ended")
	}
	if s := series(rm, telemetry.MetricResources); len(s) != 0 {
		t.Errorf("%s after Shutdown: %s, want nothing", telemetry.MetricResources, show(s))
	}
	if err := m.Close(); err != nil {
		t.Errorf("Close after the collection ended = %v", err)
	}
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	if err := m.Shutdown(done); err != nil {
		t.Errorf("Shutdown once done, with its context done = %v, want nil", err)
	}
	if err := goleak.Find(ignore); err != nil {
		t.Error(err)
	}
	if s := series(collect(t, reader), telemetry.MetricResources); len(s) != 0 {
		t.Errorf("%s after Close: %s, want nothing", telemetry.MetricResources, show(s))
	}
}
