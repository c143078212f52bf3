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

// explainRoutes are routes whose matchers, in turn, decide.
func explainRoutes() *routeconfig.VirtualHost {
	withHeaders := func(r routeconfig.Route, hs ...matcher.Header) routeconfig.Route {
		r.Headers = hs
		return r
	}
	withFraction := func(r routeconfig.Route, f uint32) routeconfig.Route {
		r.FractionPerMillion = u32(f)
		return r
	}
	return &routeconfig.VirtualHost{Routes: []routeconfig.Route{
		prefix("/svc.H/", routeconfig.Action{Kind: routeconfig.ActionClusterHeader, ClusterHeader: "x-c"}),
		withHeaders(prefix("/svc.A/", cluster("canary")), matcher.Header{Name: "x-env", Kind: matcher.Exact, Value: "canary"}),
		withHeaders(prefix("/svc.A/", cluster("absent")), matcher.Header{Name: "x-skip", Kind: matcher.Present, Present: false}),
		withFraction(prefix("/svc.A/", cluster("never")), 0),
		withFraction(prefix("/svc.A/", cluster("quarter")), 250_000),
		withFraction(prefix("/svc.A/", cluster("all")), 1_000_000),
		withHeaders(prefix("/svc.B/", cluster("bin")), matcher.Header{Name: "x-id-bin", Kind: matcher.Present, Present: true}),
		prefix("/svc.B/", routeconfig.Action{Kind: routeconfig.ActionWeightedClusters, WeightedClusters: []routeconfig.WeightedCluster{{Name: "w1", Weight: 3}, {Name: "w2", Weight: 1}}}),
		prefix("/svc.N/", routeconfig.Action{Kind: routeconfig.ActionNonForwarding}),
	}}
}

// TestExplainAgreesWithRoute checks, for RPCs that each route's matchers
// decide, that Explain's trials give the route that Route picks: with
// every random draw at its lowest, the first route with a Chance above 0;
// at its highest, the first route whose Chance is Certain.
func TestExplainAgreesWithRoute(t *testing.T) {
	vh := explainRoutes()
	var draw uint32
	tbl, err := routing.Compile(vh, routing.WithRand(func(n uint32) uint32 { return min(draw, n-1) }))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method string
		md     []string
		// first is the index of the first route with a chance, certain
		// the first certain one (-1: none); last the index of the last
		// trial.
		first, certain int
	}{
		{"/svc.A/M", []string{"x-env", "canary"}, 1, 1},
		{"/svc.A/M", []string{"x-env", "prod"}, 2, 2},
		{"/svc.A/M", []string{"x-skip", "1"}, 4, 5},
		{"/svc.B/M", []string{"x-id-bin", "\x01"}, 7, 7}, // a -bin header is never present to a matcher
		{"/svc.H/M", nil, -1, -1},
		{"/svc.N/M", nil, 8, 8},
		{"/other/M", nil, -1, -1},
	} {
		t.Run(fmt.Sprint(tc.method, tc.md), func(t *testing.T) {
			ctx := context.Background()
			if len(tc.md) > 0 {
				ctx = metadata.AppendToOutgoingContext(ctx, tc.md...)
			}
			trials := tbl.Explain(ctx, tc.method)
			first, certain := -1, -1
			for i, tr := range trials {
				if tr.Route != i {
					t.Errorf("trial %d is of route %d", i, tr.Route)
				}
				if tr.Chance > 0 && first < 0 {
					first = i
				}
				if tr.Chance == routing.Certain && certain < 0 {
					certain = i
				}
			}
			if first != tc.first || certain != tc.certain {
				t.Errorf("first route with a chance %d, first certain %d; want %d, %d", first, certain, tc.first, tc.certain)
			}
			if last := len(trials) - 1; tc.certain >= 0 && last != tc.certain || tc.certain < 0 && last != len(vh.Routes)-1 {
				t.Errorf("%d trials, want them to end at the first certain route %d", len(trials), tc.certain)
			}
			for _, c := range []struct {
				draw uint32
				want int
			}{{0, first}, {routing.Certain - 1, certain}} {
				draw = c.draw
				if d := tbl.Route(ctx, tc.method); d.Route != c.want {
					t.Errorf("with draws of %d, Route chose route %d (%v), Explain says %d", c.draw, d.Route, d.Outcome, c.want)
				}
			}
		})
	}
}

// TestExplainWhy checks what a trial says of the matcher that decided.
func TestExplainWhy(t *testing.T) {
	tbl, err := routing.Compile(explainRoutes())
	if err != nil {
		t.Fatal(err)
	}
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-env", "prod", "x-env", "qa", "x-skip", "")
	trials := tbl.Explain(ctx, "/svc.A/M")
	if len(trials) != 6 {
		t.Fatalf("%d trials, want 6: %+v", len(trials), trials)
	}
	want := []routing.Trial{
		{Route: 0, Ignored: true, Header: -1},
		{Route: 1, Path: true, Header: 0, HeaderValue: "prod,qa", HeaderPresent: true},
		{Route: 2, Path: true, Header: 0, HeaderValue: "", HeaderPresent: true}, // sent empty: present, as in C-core
		{Route: 3, Path: true, Header: -1, Chance: 0},
		{Route: 4, Path: true, Header: -1, Chance: 250_000},
		{Route: 5, Path: true, Header: -1, Chance: routing.Certain},
	}
	for i := range want {
		if trials[i] != want[i] {
			t.Errorf("trial %d = %+v, want %+v", i, trials[i], want[i])
		}
	}
	if tr := tbl.Explain(context.Background(), "/nope/M")[1]; tr.Path || tr.Header != -1 {
		t.Errorf("a path that does not match: %+v, want Path false and no header evaluated", tr)
	}
}

// TestChoices checks the weights of a route's clusters in the order of
// its draw, by drawing each number.
func TestChoices(t *testing.T) {
	var draw uint32
	tbl, err := routing.Compile(explainRoutes(), routing.WithRand(func(uint32) uint32 { return draw }))
	if err != nil {
		t.Fatal(err)
	}
	choices := tbl.Choices(7)
	if got := fmt.Sprint(choices); got != fmt.Sprint([]routing.Choice{{Cluster: 6, Weight: 3, Total: 4}, {Cluster: 7, Weight: 1, Total: 4}}) {
		t.Fatalf("Choices(7) = %v", got)
	}
	var next uint32
	for _, c := range choices {
		for range c.Weight {
			draw = next
			next++
			if d := tbl.Route(context.Background(), "/svc.B/M"); d.Cluster != c.Cluster {
				t.Errorf("draw %d: cluster %s, want %s", draw, tbl.Clusters[d.Cluster], tbl.Clusters[c.Cluster])
			}
		}
	}
	if got := tbl.Choices(5); len(got) != 1 || got[0].Weight != 1 || got[0].Total != 1 || tbl.Clusters[got[0].Cluster] != "all" {
		t.Errorf("Choices(5) = %v, want the one cluster \"all\"", got)
	}
	if got := tbl.Choices(8); len(got) != 0 {
		t.Errorf("Choices of a route that cannot forward = %v, want none", got)
	}
	if got := tbl.Choices(99); got != nil {
		t.Errorf("Choices(99) = %v, want nil", got)
	}
}

func TestDescribe(t *testing.T) {
	r := routeconfig.Route{
		PathMatch: routeconfig.PathExact, Path: "/svc/M", CaseInsensitive: true,
		Headers: []matcher.Header{
			{Name: "x-env", Kind: matcher.Exact, Value: "canary", IgnoreCase: true},
			{Name: "x-id", Kind: matcher.Present, Present: true, Invert: true},
			{Name: "x-n", Kind: matcher.Range, RangeStart: 1, RangeEnd: 10},
		},
		FractionPerMillion: u32(333_333),
		Action:             routeconfig.Action{Kind: routeconfig.ActionWeightedClusters, WeightedClusters: []routeconfig.WeightedCluster{{Name: "a", Weight: 80}, {Name: "b", Weight: 20}}},
		HashPolicies:       []routeconfig.HashPolicy{{Kind: routeconfig.HashHeader, HeaderName: "x-user", Regex: "^u-", Terminal: true}, {Kind: routeconfig.HashChannelID}},
		RetryPolicy:        &routeconfig.RetryPolicy{RetryOn: []string{"unavailable"}, NumRetries: 2, BaseInterval: 25e6, MaxInterval: 250e6},
	}
	want := `path "/svc/M" (ignoring case), header "x-env" exact "canary" (ignoring case), header "x-id" not present, header "x-n" range [1, 10), runtime_fraction 33.33% -> weighted_clusters "a" 80, "b" 20, retry on [unavailable] up to 2 retries, backoff 25ms to 250ms, hash header "x-user" rewritten "^u-" -> "" (terminal), hash channel_id`
	if got := routing.DescribeRoute(&r); got != want {
		t.Errorf("DescribeRoute =\n%s\nwant\n%s", got, want)
	}
	for _, tc := range []struct {
		n, total int64
		want     string
	}{{1, 4, "25%"}, {1, 3, "33.33%"}, {0, 5, "0%"}, {5, 5, "100%"}, {1, 0, "0%"}} {
		if got := routing.Percent(tc.n, tc.total); got != tc.want {
			t.Errorf("Percent(%d, %d) = %q, want %q", tc.n, tc.total, got, tc.want)
		}
	}
}
