package clusterlb_test

import (
	"google.golang.org/grpc/balancer"

	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsgrpc/internal/clusterlb"
)

// A parent policy runs one Balancer per route-level cluster of the
// dependency manager's Config, and gives it that cluster's leaves. (A
// sketch: it compiles, and is not run.)
func ExampleNew() {
	var (
		cc       balancer.ClientConn       // the parent's ClientConn, or one it gives its children
		opts     balancer.BuildOptions     // the parent's BuildOptions
		xds      *xdsconfig.Config         // the dependency manager's latest Config
		reporter clusterlb.LoadReporter    // the channel's *xdsclient.Client
		counters = clusterlb.NewCounters() // one per xdsclient.Client
	)
	route := xds.Clusters["c1"]
	leaves := []*xdsconfig.ClusterConfig{route}
	if !route.IsLeaf() && route.Err == nil { // an aggregate cluster
		leaves = leaves[:0]
		for _, name := range route.Leaves {
			leaves = append(leaves, xds.Clusters[name])
		}
	}
	b := clusterlb.New(cc, opts)
	defer b.Close()
	_ = b.UpdateClientConnState(balancer.ClientConnState{BalancerConfig: &clusterlb.Config{
		Name:         route.Name,
		Leaves:       leaves,
		LoadReporter: reporter,
		Counters:     counters,
		Hooks: &clusterlb.Hooks{
			Dropped: func(i clusterlb.DropInfo) { /* count the drop of i.Category in i.Leaf */ },
		},
	}})
}
