package xdsgrpc

import (
	"context"
	"fmt"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"google.golang.org/grpc/balancer"

	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsgrpc/internal/routing"
)

// donePicker stands for a cluster's policy that has an endpoint ready: the
// benchmark measures the routing policy's own cost, which is added to the
// cluster policy's (see clusterlb's BenchmarkPick).
type donePicker struct{}

func (donePicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{}, nil
}

// BenchmarkRouterPick routes picks through a virtual host of 1,000 routes
// over 100 clusters: the method of the last route (the worst case), and one
// of the first, with and without a CallInfo in the context.
func BenchmarkRouterPick(b *testing.B) {
	vh := &routeconfig.VirtualHost{Name: "vh", Domains: []string{"*"}}
	for i := range 1000 {
		vh.Routes = append(vh.Routes, routeconfig.Route{
			PathMatch: routeconfig.PathExact, Path: fmt.Sprintf("/pkg.S%d/Method", i),
			Action: routeconfig.Action{Kind: routeconfig.ActionCluster, Cluster: fmt.Sprintf("c%d", i%100)},
		})
	}
	table, err := routing.Compile(vh)
	if err != nil {
		b.Fatal(err)
	}
	bld := NewBuilder(nil)
	r := &router{}
	p := &picker{
		r:     r,
		state: &channelState{config: &xdsconfig.Config{VirtualHost: vh}, builder: bld, resolver: &xdsResolver{}},
		table: table,
		slots: make([]slot, len(table.Clusters)),
	}
	for i, name := range table.Clusters {
		e := &clusterEntry{r: r, name: name}
		e.state.Store(&balancer.State{Picker: donePicker{}})
		p.slots[i] = slot{name: name, entry: e}
	}
	for _, bc := range []struct {
		name, method string
		callInfo     bool
	}{
		{"last-route", "/pkg.S999/Method", false},
		{"first-route", "/pkg.S0/Method", false},
		{"last-route-callinfo", "/pkg.S999/Method", true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			if bc.callInfo {
				ctx = WithCallInfo(ctx, &CallInfo{})
			}
			info := balancer.PickInfo{FullMethodName: bc.method, Ctx: ctx}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Pick(info); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
