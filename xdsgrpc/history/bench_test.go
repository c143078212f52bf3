package history_test

import (
	"fmt"
	"maps"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc/history"
)

// BenchmarkRecordEndpointChange records configs of n clusters that differ
// from the one before in one cluster's endpoints, as an EDS update makes
// them: the cost a channel's history adds to each config.
func BenchmarkRecordEndpointChange(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprint("clusters=", n), func(b *testing.B) {
			var routes []routeconfig.Route
			for i := range n {
				routes = append(routes, toCluster(fmt.Sprint("c", i), fmt.Sprint("/s", i, "/")))
			}
			base := config(routes...)
			r := history.NewRecorder("t", "l", history.DefaultSize)
			r.Config(base)
			cfgs := make([]*xdsconfig.Config, 64)
			for i := range cfgs {
				c := *base
				c.Clusters = maps.Clone(base.Clusters)
				name := fmt.Sprint("c", i%n)
				s := *c.Clusters[name]
				s.EndpointsVersion = fmt.Sprint(i)
				s.Endpoints = &xdsresource.ClusterLoadAssignment{ClusterName: name, Localities: []xdsresource.Locality{{Weight: 1, Endpoints: []xdsresource.Endpoint{{Addresses: []string{fmt.Sprint("10.0.0.1:", i)}}}}}}
				c.Clusters[name] = &s
				cfgs[i] = &c
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				r.Config(cfgs[i%len(cfgs)])
			}
		})
	}
}
