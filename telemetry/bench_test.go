package telemetry_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/telemetry"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// BenchmarkCDSFullState is the client's update benchmark (one full-state
// CDS response of n clusters, every one changed or none, to one watcher
// per cluster) with the telemetry hooks attached (telemetry=on, an SDK
// MeterProvider with a ManualReader) and without (telemetry=off). Compare
// with benchstat -col /telemetry.
func BenchmarkCDSFullState(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		responses := [2]*discoveryv3.DiscoveryResponse{xdstest.FullStateClusters(n, 0), xdstest.FullStateClusters(n, 1)}
		for _, changed := range []bool{true, false} {
			for _, on := range []bool{false, true} {
				name := fmt.Sprintf("changed=%v/n=%d/telemetry=%s", changed, n, map[bool]string{true: "on", false: "off"}[on])
				b.Run(name, func(b *testing.B) { benchClient(b, n, responses, changed, on) })
			}
		}
	}
}

func benchClient(b *testing.B, n int, responses [2]*discoveryv3.DiscoveryResponse, changed, telemetryOn bool) {
	srv := xdstest.NewPushServer(b)
	addr := srv.Addr()
	c, err := xdsclient.New(bootstrapFor(addr).Parse(b), clientOptions()...)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var reader *sdkmetric.ManualReader
	if telemetryOn {
		reader, _ = newMetrics(b, c)
		defer c.AddHooks(&xdsclient.Hooks{ResponseReceived: func(xdsclient.ResponseInfo) { xdstest.Notify() }})()
	}
	w := xdstest.NewCountdown(n)
	for i := range n {
		defer c.Watch(xdsresource.ClusterType, fmt.Sprintf("c%d", i), w)()
	}
	srv.Push <- responses[0]
	w.Wait()
	wire, _ := proto.Marshal(responses[0])
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	cpu0 := cpuTime()
	srv.RunUpdates(b, w, responses, changed)
	b.StopTimer()
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "resources/s")
	// CPU time of the whole process (client and push server) per update:
	// less disturbed than wall time by other processes on a busy machine.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	if reader != nil {
		// The metrics saw every update. The last response's hooks may
		// run after its ACK or its callbacks, so wait for them.
		want := map[string]float64{lbl(telemetry.KeyTarget, testTarget, telemetry.KeyServer, addr,
			telemetry.KeyResourceType, cdsName): float64(n) * float64(b.N+1)}
		ctx, cancel := context.WithTimeout(context.Background(), xdstest.Timeout)
		defer cancel()
		waitSeries(b, ctx, reader, telemetry.MetricResourceUpdatesValid, want)
	}
}

// BenchmarkCollectClient measures one collection with n resources cached
// by a real client (compare BenchmarkCollect, which reaches 100k
// resources through the hooks directly).
func BenchmarkCollectClient(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("resources=%d", n), func(b *testing.B) {
			srv := xdstest.NewPushServer(b)
			addr := srv.Addr()
			c, err := xdsclient.New(bootstrapFor(addr).Parse(b), clientOptions()...)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			reader, _ := newMetrics(b, c)
			w := xdstest.NewCountdown(n)
			for i := range n {
				defer c.Watch(xdsresource.ClusterType, fmt.Sprintf("c%d", i), w)()
			}
			srv.Push <- xdstest.FullStateClusters(n, 0)
			w.Wait()
			var rm metricdata.ResourceMetrics
			b.ReportAllocs()
			for b.Loop() {
				if err := reader.Collect(context.Background(), &rm); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// cpuTime returns the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
