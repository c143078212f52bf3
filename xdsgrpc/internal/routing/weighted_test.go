package routing_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"
	"github.com/xdslens/xdslens/xdsgrpc/internal/routing"
)

// weightedRoute is a virtual host of one route over n clusters c0, c1, ...
// of the weights weight(i).
func weightedRoute(n int, weight func(i int) uint32) *routeconfig.VirtualHost {
	var wcs []routeconfig.WeightedCluster
	for i := range n {
		wcs = append(wcs, routeconfig.WeightedCluster{Name: fmt.Sprintf("c%d", i), Weight: weight(i)})
	}
	return &routeconfig.VirtualHost{Routes: []routeconfig.Route{
		prefix("", routeconfig.Action{Kind: routeconfig.ActionWeightedClusters, WeightedClusters: wcs}),
	}}
}

// TestWeightedClustersBoundaries checks the draw at each edge of every
// cluster's share: with weights 1, 2, 3, ... the draws 0 | 1 2 | 3 4 5 |
// ... go to c0 | c1 | c2 | ..., and the largest draw of a sum of weights
// that fills a uint32 goes to the last cluster.
func TestWeightedClustersBoundaries(t *testing.T) {
	const n = 100
	var draws []uint32
	var want []string
	var start uint32
	for i := range n {
		w := uint32(i + 1)
		draws = append(draws, start, start+w-1)
		want = append(want, fmt.Sprintf("c%d", i), fmt.Sprintf("c%d", i))
		start += w
	}
	tbl, err := routing.Compile(weightedRoute(n, func(i int) uint32 { return uint32(i + 1) }), routing.WithRand(seq(draws...)))
	if err != nil {
		t.Fatal(err)
	}
	for k, w := range want {
		if got := route(t, tbl, context.Background(), "/s/m"); got != w {
			t.Errorf("draw %d: routed to %s, want %s", draws[k], got, w)
		}
	}
	full := weightedRoute(3, func(i int) uint32 { return []uint32{1, 1<<32 - 3, 1}[i] })
	tbl, err = routing.Compile(full, routing.WithRand(seq(0, 1, 1<<32-3, 1<<32-2)))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"c0", "c1", "c1", "c2"} {
		if got := route(t, tbl, context.Background(), "/s/m"); got != w {
			t.Errorf("a sum of 2^32-1: routed to %s, want %s", got, w)
		}
	}
}

// BenchmarkRouteWeighted routes RPCs over a route of 100,000 weighted
// clusters of weight 1, each RPC a fresh draw.
func BenchmarkRouteWeighted(b *testing.B) {
	tbl, err := routing.Compile(weightedRoute(100_000, func(int) uint32 { return 1 }))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if d := tbl.Route(ctx, "/svc.S/Method"); d.Outcome != routing.Routed {
			b.Fatal(d)
		}
	}
}
