package routing_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"
	"github.com/xdslens/xdslens/xdsgrpc/internal/routing"
)

func u32(v uint32) *uint32 { return &v }

func cluster(name string) routeconfig.Action {
	return routeconfig.Action{Kind: routeconfig.ActionCluster, Cluster: name}
}

func prefix(p string, a routeconfig.Action) routeconfig.Route {
	return routeconfig.Route{PathMatch: routeconfig.PathPrefix, Prefix: p, Action: a}
}

// route returns the cluster name the table routes (ctx, method) to, or the
// outcome's name.
func route(t *testing.T, tbl *routing.Table, ctx context.Context, method string) string {
	t.Helper()
	d := tbl.Route(ctx, method)
	if d.Outcome != routing.Routed {
		return d.Outcome.String()
	}
	return tbl.Clusters[d.Cluster]
}

func TestPathMatching(t *testing.T) {
	vh := &routeconfig.VirtualHost{Routes: []routeconfig.Route{
		{PathMatch: routeconfig.PathExact, Path: "/svc.A/Get", Action: cluster("exact")},
		{PathMatch: routeconfig.PathExact, Path: "/SVC.B/get", CaseInsensitive: true, Action: cluster("exact-ci")},
		{PathMatch: routeconfig.PathRegex, SafeRegex: "/svc\\.R/.*", CaseInsensitive: true, Action: cluster("regex")},
		{PathMatch: routeconfig.PathPrefix, Prefix: "/SVC.C/", CaseInsensitive: true, Action: cluster("prefix-ci")},
		prefix("/svc.A/", cluster("prefix")),
		prefix("/svc.N/", routeconfig.Action{Kind: routeconfig.ActionNonForwarding}),
		prefix("/svc.H/", routeconfig.Action{Kind: routeconfig.ActionClusterHeader, ClusterHeader: "x-cluster"}),
		prefix("/svc.U/", routeconfig.Action{Kind: routeconfig.ActionUnsupported}),
	}}
	tbl, err := routing.Compile(vh)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct{ method, want string }{
		{"/svc.A/Get", "exact"},
		{"/svc.A/get", "prefix"}, // exact is case-sensitive by default
		{"/svc.A/Put", "prefix"},
		{"/svc.b/GET", "exact-ci"},
		{"/svc.R/x", "regex"},
		{"/SVC.R/x", "no_route"}, // safe_regex ignores case_sensitive, as C-core does
		{"/svc.c/M", "prefix-ci"},
		{"/svc.N/M", "unsupported_action"},
		{"/svc.H/M", "no_route"}, // a cluster_header route is ignored
		{"/svc.U/M", "unsupported_action"},
		{"/other/M", "no_route"},
	} {
		if got := route(t, tbl, ctx, tc.method); got != tc.want {
			t.Errorf("%s: routed to %s, want %s", tc.method, got, tc.want)
		}
	}
	if got, want := fmt.Sprint(tbl.Clusters), "[exact exact-ci regex prefix-ci prefix]"; got != want {
		t.Errorf("Clusters = %s, want %s", got, want)
	}
}

// seq returns a Rand that yields vs in turn.
func seq(vs ...uint32) routing.Rand {
	i := 0
	return func(n uint32) uint32 {
		v := vs[i%len(vs)] % n
		i++
		return v
	}
}

func TestRuntimeFraction(t *testing.T) {
	vh := &routeconfig.VirtualHost{Routes: []routeconfig.Route{
		{PathMatch: routeconfig.PathPrefix, FractionPerMillion: u32(250_000), Action: cluster("quarter")},
		{PathMatch: routeconfig.PathPrefix, FractionPerMillion: u32(0), Action: cluster("never")},
		prefix("", cluster("rest")),
	}}
	tbl, err := routing.Compile(vh, routing.WithRand(seq(0, 249_999, 250_000, 0, 999_999, 999_999)))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 4 {
		got = append(got, route(t, tbl, context.Background(), "/s/m"))
	}
	// The draws 0 and 249,999 fall under 25%; 250,000 and 999,999 do not.
	// The third and fourth RPCs then draw for the second route too: 0 and
	// 999,999, and a fraction of 0 matches neither.
	if fmt.Sprint(got) != "[quarter quarter rest rest]" {
		t.Errorf("routes = %v, want [quarter quarter rest rest]", got)
	}
}

func TestWeightedClusters(t *testing.T) {
	vh := &routeconfig.VirtualHost{Routes: []routeconfig.Route{
		prefix("", routeconfig.Action{Kind: routeconfig.ActionWeightedClusters, WeightedClusters: []routeconfig.WeightedCluster{
			{Name: "a", Weight: 1}, {Name: "b", Weight: 3},
		}}),
	}}
	tbl, err := routing.Compile(vh, routing.WithRand(seq(0, 1, 2, 3)))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 4 {
		got = append(got, route(t, tbl, context.Background(), "/s/m"))
	}
	if fmt.Sprint(got) != "[a b b b]" {
		t.Errorf("picks = %v, want [a b b b]", got)
	}
	// With the real random source, the split is 1:3 within a tight bound.
	tbl, _ = routing.Compile(vh)
	counts := map[string]int{}
	const n = 100_000
	for range n {
		counts[route(t, tbl, context.Background(), "/s/m")]++
	}
	if a := float64(counts["a"]) / n; a < 0.24 || a > 0.26 {
		t.Errorf("share of a = %.3f, want 0.25±0.01", a)
	}
}

// BenchmarkRoute routes an RPC that matches the last of 1,000 routes over
// 100 clusters: the worst case of a path-only table.
func BenchmarkRoute(b *testing.B) {
	vh := &routeconfig.VirtualHost{}
	for i := range 1000 {
		vh.Routes = append(vh.Routes, routeconfig.Route{PathMatch: routeconfig.PathExact, Path: fmt.Sprintf("/svc.S%d/Method", i), Action: cluster(fmt.Sprintf("c%d", i%100))})
	}
	tbl, err := routing.Compile(vh)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if d := tbl.Route(ctx, "/svc.S999/Method"); d.Outcome != routing.Routed {
			b.Fatal(d)
		}
	}
}
