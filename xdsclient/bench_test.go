package xdsclient_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslens/xdslens/internal/controlplane"
	"github.com/xdslens/xdslens/internal/xdstest"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// cdsResponse is a full-state CDS response of n EDS clusters; variant
// changes every cluster's bytes.
func cdsResponse(n, variant int) *discoveryv3.DiscoveryResponse {
	resp := &discoveryv3.DiscoveryResponse{TypeUrl: cdsURL, VersionInfo: fmt.Sprint(variant), Nonce: fmt.Sprint(variant)}
	for i := 0; i < n; i++ {
		c := controlplane.Cluster(fmt.Sprintf("c%d", i), fmt.Sprintf("c%d", i))
		c.ConnectTimeout = durationpb.New(time.Duration(variant+1) * time.Second)
		a, _ := anypb.New(c)
		resp.Resources = append(resp.Resources, a)
	}
	return resp
}

// BenchmarkCDSFullState measures one full-state CDS response of n clusters,
// every one changed, from the wire to every watcher (one watcher per
// cluster), against the floor of unmarshalling the same bytes.
func BenchmarkCDSFullState(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		responses := [2]*discoveryv3.DiscoveryResponse{cdsResponse(n, 0), cdsResponse(n, 1)}
		wire, _ := proto.Marshal(responses[0])

		b.Run(fmt.Sprintf("client/changed/n=%d", n), func(b *testing.B) {
			benchClient(b, n, responses, true)
		})
		b.Run(fmt.Sprintf("client/unchanged/n=%d", n), func(b *testing.B) {
			benchClient(b, n, responses, false)
		})
		b.Run(fmt.Sprintf("floor/unmarshal/n=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for b.Loop() {
				resp := &discoveryv3.DiscoveryResponse{}
				if err := proto.Unmarshal(wire, resp); err != nil {
					b.Fatal(err)
				}
				for _, a := range resp.GetResources() {
					c := &clusterv3.Cluster{}
					if err := a.UnmarshalTo(c); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "resources/s")
		})
	}
}

func benchClient(b *testing.B, n int, responses [2]*discoveryv3.DiscoveryResponse, changed bool) {
	srv := xdstest.NewPushServer(b)
	addr := srv.Addr()
	c, err := xdsclient.New(bootstrapFor(b, addr), xdsclient.WithLegacyDataErrorHandling(false), xdsclient.WithResourceTimeout(time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var delivered atomic.Int64
	all := make(chan struct{}, 1)
	w := xdsclient.WatcherFuncs{OnResourceChanged: func(*xdsclient.Resource, error) {
		if delivered.Add(1) == int64(n) {
			all <- struct{}{}
		}
	}}
	for i := 0; i < n; i++ {
		defer c.Watch(xdsresource.ClusterType, fmt.Sprintf("c%d", i), w)()
	}
	srv.Push <- responses[0]
	<-all
	wire, _ := proto.Marshal(responses[0])
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		delivered.Store(0)
		if changed {
			srv.Push <- responses[i%2]
			<-all
		} else {
			// The same bytes again: nothing to deliver; wait for the ACK.
			srv.Push <- responses[0]
			<-srv.Requests
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "resources/s")
}
