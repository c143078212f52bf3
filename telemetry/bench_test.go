package telemetry_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslens/xdslens/internal/xdstest"
	"github.com/xdslens/xdslens/telemetry"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// cdsResponse is a full-state CDS response of n EDS clusters; variant
// changes every cluster's bytes.
func cdsResponse(n, variant int) *discoveryv3.DiscoveryResponse {
	resp := &discoveryv3.DiscoveryResponse{TypeUrl: cdsURL, VersionInfo: fmt.Sprint(variant), Nonce: fmt.Sprint(variant)}
	for i := range n {
		c := cluster(fmt.Sprintf("c%d", i))
		c.ConnectTimeout = durationpb.New(time.Duration(variant+1) * time.Second)
		a, _ := anypb.New(c)
		resp.Resources = append(resp.Resources, a)
	}
	return resp
}

// BenchmarkCDSFullState is the client's update benchmark (one full-state
// CDS response of n clusters, every one changed or none, to one watcher
// per cluster) with the telemetry hooks attached (telemetry=on, an SDK
// MeterProvider with a ManualReader) and without (telemetry=off). Compare
// with benchstat -col /telemetry.
func BenchmarkCDSFullState(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		responses := [2]*discoveryv3.DiscoveryResponse{cdsResponse(n, 0), cdsResponse(n, 1)}
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
	c, err := xdsclient.New(parseBootstrap(b, bootstrapJSON(addr, nil, "")), clientOptions()...)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var reader *sdkmetric.ManualReader
	if telemetryOn {
		reader, _ = newMetrics(b, c)
		defer c.AddHooks(&xdsclient.Hooks{ResponseReceived: func(xdsclient.ResponseInfo) { events.notify() }})()
	}
	var delivered atomic.Int64
	all := make(chan struct{}, 1)
	w := xdsclient.WatcherFuncs{OnResourceChanged: func(*xdsclient.Resource, error) {
		if delivered.Add(1) == int64(n) {
			all <- struct{}{}
		}
	}}
	for i := range n {
		defer c.Watch(xdsresource.ClusterType, fmt.Sprintf("c%d", i), w)()
	}
	srv.Push <- responses[0]
	<-all
	wire, _ := proto.Marshal(responses[0])
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	cpu0 := cpuTime()
	i := 0
	for b.Loop() {
		i++
		delivered.Store(0)
		if changed {
			srv.Push <- responses[i%2]
			<-all
		} else {
			srv.Push <- responses[0]
			<-srv.Requests
		}
	}
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
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
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
			c, err := xdsclient.New(parseBootstrap(b, bootstrapJSON(addr, nil, "")), clientOptions()...)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			reader, _ := newMetrics(b, c)
			var delivered atomic.Int64
			all := make(chan struct{}, 1)
			w := xdsclient.WatcherFuncs{OnResourceChanged: func(*xdsclient.Resource, error) {
				if delivered.Add(1) == int64(n) {
					all <- struct{}{}
				}
			}}
			for i := range n {
				defer c.Watch(xdsresource.ClusterType, fmt.Sprintf("c%d", i), w)()
			}
			srv.Push <- cdsResponse(n, 0)
			<-all
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
