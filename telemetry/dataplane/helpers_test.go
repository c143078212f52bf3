package dataplane_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.uber.org/goleak"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/telemetry/dataplane"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// TestMain checks that no goroutine outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit))
}

// measure attaches the data-plane metrics to b with New, read by the
// returned reader, until the test ends.
func measure(t *testing.T, b *xdsgrpc.Builder) *sdkmetric.ManualReader {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	m, err := dataplane.New(b, mp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return reader
}
