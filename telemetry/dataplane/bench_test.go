package dataplane

import (
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/xdslens/xdslens/xdsgrpc"
)

// BenchmarkDataPlanePick is what the data-plane instruments add to an RPC
// through an xdslens channel: one pick and the end of the call, on label
// sets already seen.
func BenchmarkDataPlanePick(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer mp.Shutdown(b.Context())
	d, err := New(xdsgrpc.NewBuilder(nil), mp)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	pick := xdsgrpc.PickInfo{Target: "xdslens:///svc", Cluster: "c", Leaf: "c", Outcome: xdsgrpc.PickSent}
	end := xdsgrpc.CallEndInfo{Target: "xdslens:///svc", Cluster: "c", Leaf: "c"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			d.picked(pick)
			d.callFinished(end)
		}
	})
}
