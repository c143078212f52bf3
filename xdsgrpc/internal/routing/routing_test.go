package routing_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"google.golang.org/grpc/metadata"

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

func TestHeaderMatching(t *testing.T) {
	h := func(m matcher.Header, name string) routeconfig.Route {
		r := prefix("", cluster(name))
		r.Headers = []matcher.Header{m}
		return r
	}
	type kv = []string
	for _, tc := range []struct {
		name string
		m    matcher.Header
		md   kv
		want bool
	}{
		{"exact", matcher.Header{Name: "x-env", Kind: matcher.Exact, Value: "canary"}, kv{"x-env", "canary"}, true},
		{"exact other", matcher.Header{Name: "x-env", Kind: matcher.Exact, Value: "canary"}, kv{"x-env", "prod"}, false},
		{"exact absent", matcher.Header{Name: "x-env", Kind: matcher.Exact, Value: "canary"}, nil, false},
		{"exact inverted absent", matcher.Header{Name: "x-env", Kind: matcher.Exact, Value: "canary", Invert: true}, nil, false},
		{"exact inverted other", matcher.Header{Name: "x-env", Kind: matcher.Exact, Value: "canary", Invert: true}, kv{"x-env", "prod"}, true},
		{"exact ignore case", matcher.Header{Name: "x-env", Kind: matcher.Exact, Value: "Canary", IgnoreCase: true}, kv{"x-env", "CANARY"}, true},
		{"upper-case key in metadata", matcher.Header{Name: "x-env", Kind: matcher.Exact, Value: "a"}, kv{"X-Env", "a"}, true},
		{"several values joined", matcher.Header{Name: "x-v", Kind: matcher.Exact, Value: "a,b"}, kv{"x-v", "a", "x-v", "b"}, true},
		{"prefix", matcher.Header{Name: "x-v", Kind: matcher.Prefix, Value: "ab"}, kv{"x-v", "abc"}, true},
		{"prefix ignore case", matcher.Header{Name: "x-v", Kind: matcher.Prefix, Value: "AB", IgnoreCase: true}, kv{"x-v", "abc"}, true},
		{"suffix", matcher.Header{Name: "x-v", Kind: matcher.Suffix, Value: "bc"}, kv{"x-v", "abc"}, true},
		{"suffix no", matcher.Header{Name: "x-v", Kind: matcher.Suffix, Value: "bc"}, kv{"x-v", "abd"}, false},
		{"contains", matcher.Header{Name: "x-v", Kind: matcher.Contains, Value: "B", IgnoreCase: true}, kv{"x-v", "abc"}, true},
		{"regex full", matcher.Header{Name: "x-v", Kind: matcher.Regex, Value: "a.c"}, kv{"x-v", "abc"}, true},
		{"regex partial", matcher.Header{Name: "x-v", Kind: matcher.Regex, Value: "b"}, kv{"x-v", "abc"}, false},
		{"range in", matcher.Header{Name: "x-n", Kind: matcher.Range, RangeStart: 10, RangeEnd: 20}, kv{"x-n", "10"}, true},
		{"range end excluded", matcher.Header{Name: "x-n", Kind: matcher.Range, RangeStart: 10, RangeEnd: 20}, kv{"x-n", "20"}, false},
		{"range not a number", matcher.Header{Name: "x-n", Kind: matcher.Range, RangeStart: 10, RangeEnd: 20}, kv{"x-n", "15x"}, false},
		{"present", matcher.Header{Name: "x-p", Kind: matcher.Present, Present: true}, kv{"x-p", ""}, true},
		{"present absent", matcher.Header{Name: "x-p", Kind: matcher.Present, Present: true}, nil, false},
		{"present false absent", matcher.Header{Name: "x-p", Kind: matcher.Present, Present: false}, nil, true},
		{"present inverted absent", matcher.Header{Name: "x-p", Kind: matcher.Present, Present: true, Invert: true}, nil, true},
		{"binary header never present", matcher.Header{Name: "x-b-bin", Kind: matcher.Present, Present: true}, kv{"x-b-bin", "\x01"}, false},
		{"binary header absent inverted", matcher.Header{Name: "x-b-bin", Kind: matcher.Present, Present: true, Invert: true}, kv{"x-b-bin", "\x01"}, true},
		{"binary header present_match false", matcher.Header{Name: "x-b-bin", Kind: matcher.Present, Present: false}, kv{"x-b-bin", "\x01"}, true},
		{"binary header exact never matches", matcher.Header{Name: "x-b-bin", Kind: matcher.Exact, Value: "\x01"}, kv{"x-b-bin", "\x01"}, false},
		{"binary header prefix inverted never matches", matcher.Header{Name: "x-b-bin", Kind: matcher.Prefix, Value: "z", Invert: true}, kv{"x-b-bin", "\x01"}, false},
		{"present_match false on an empty value", matcher.Header{Name: "x-p", Kind: matcher.Present, Present: false}, kv{"x-p", ""}, false},
		{"exact empty value", matcher.Header{Name: "x-p", Kind: matcher.Exact, Value: ""}, kv{"x-p", ""}, true},
		{"content-type is application/grpc", matcher.Header{Name: "content-type", Kind: matcher.Exact, Value: "application/grpc"}, nil, true},
		{"content-type from metadata ignored", matcher.Header{Name: "content-type", Kind: matcher.Exact, Value: "text/plain"}, kv{"content-type", "text/plain"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tbl, err := routing.Compile(&routeconfig.VirtualHost{Routes: []routeconfig.Route{h(tc.m, "match")}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if tc.md != nil {
				ctx = metadata.NewOutgoingContext(ctx, metadata.Pairs(tc.md...))
			}
			if got := route(t, tbl, ctx, "/s/m") == "match"; got != tc.want {
				t.Errorf("matched = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHeaderAppendedMetadata(t *testing.T) {
	r := prefix("", cluster("c"))
	r.Headers = []matcher.Header{{Name: "x-env", Kind: matcher.Exact, Value: "a,b"}}
	tbl, err := routing.Compile(&routeconfig.VirtualHost{Routes: []routeconfig.Route{r}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("x-env", "a"))
	ctx = metadata.AppendToOutgoingContext(ctx, "X-Env", "b")
	if got := route(t, tbl, ctx, "/s/m"); got != "c" {
		t.Errorf("routed to %s, want c (values of NewOutgoingContext and AppendToOutgoingContext joined)", got)
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

// TestRememberedMethodsAgree checks that routing a method again, from the
// remembered path matches, decides as the first routing did, including
// when header matchers pass over some of the routes, and when more routes
// match a path than are remembered.
func TestRememberedMethodsAgree(t *testing.T) {
	vh := &routeconfig.VirtualHost{}
	for i := range 200 {
		r := prefix(fmt.Sprintf("/svc.S%d/", i%7), cluster(fmt.Sprintf("c%d", i)))
		if i%3 == 0 {
			r.Headers = []matcher.Header{{Name: "x-k", Kind: matcher.Exact, Value: fmt.Sprint(i % 5)}}
		}
		vh.Routes = append(vh.Routes, r)
	}
	for i := range 100 { // 100 catch-all routes: more than MaxRememberedRoutes match every path
		r := prefix("/", cluster(fmt.Sprintf("all%d", i)))
		r.Headers = []matcher.Header{{Name: "x-all", Kind: matcher.Exact, Value: fmt.Sprint(i)}}
		vh.Routes = append(vh.Routes, r)
	}
	tbl, err := routing.Compile(vh)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		for s := range 8 {
			for k := range 6 {
				ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("x-k", fmt.Sprint(k), "x-all", fmt.Sprint(k*17)))
				method := fmt.Sprintf("/svc.S%d/M", s)
				want := "no_route"
				// The reference: the first route in order whose matchers all match.
				for i, r := range vh.Routes {
					if len(method) < len(r.Prefix) || method[:len(r.Prefix)] != r.Prefix {
						continue
					}
					if len(r.Headers) > 0 && metadata.ValueFromOutgoingContext(ctx, r.Headers[0].Name)[0] != r.Headers[0].Value {
						continue
					}
					want = vh.Routes[i].Action.Cluster
					break
				}
				if got := route(t, tbl, ctx, method); got != want {
					t.Errorf("round %d: %s with x-k=%d: routed to %s, want %s", round, method, k, got, want)
				}
			}
		}
	}
}
