package xdsgrpc_test

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// explainRouteConfig is a route configuration whose routes each decide
// some RPCs: by path, by header, by runtime fraction, by weight, and
// routes that fail the RPCs they take.
func explainRouteConfig() *routev3.RouteConfiguration {
	named := func(name string, r *routev3.Route) *routev3.Route { r.Name = name; return r }
	fraction := func(m *routev3.RouteMatch, percent uint32) *routev3.RouteMatch {
		m.RuntimeFraction = &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{Numerator: percent, Denominator: typev3.FractionalPercent_HUNDRED}}
		return m
	}
	hashHeader := func(name string, terminal bool) *routev3.RouteAction_HashPolicy {
		return &routev3.RouteAction_HashPolicy{Terminal: terminal, PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{Header: &routev3.RouteAction_HashPolicy_Header{HeaderName: name}}}
	}
	channelID := &routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_FilterState_{FilterState: &routev3.RouteAction_HashPolicy_FilterState{Key: "io.grpc.channel_id"}}}

	canary := rpctest.ToCluster("B")
	canary.HashPolicy = []*routev3.RouteAction_HashPolicy{hashHeader("x-user", false)}
	canary.MaxStreamDuration = &routev3.RouteAction_MaxStreamDuration{MaxStreamDuration: durationpb.New(5 * time.Second)}
	canary.RetryPolicy = &routev3.RetryPolicy{RetryOn: "unavailable,cancelled", NumRetries: wrapperspb.UInt32(2)}
	weighted := rpctest.ToWeighted(rpctest.WeightedCluster{Name: "A", Weight: 3}, rpctest.WeightedCluster{Name: "B", Weight: 1})
	weighted.HashPolicy = []*routev3.RouteAction_HashPolicy{hashHeader("x-user", true), channelID}
	return rpctest.RouteConfig("R",
		named("other", rpctest.Route(rpctest.PathMatch("/svc.A/Other"), rpctest.ToCluster("A"))),
		named("canary", rpctest.Route(rpctest.WithHeader(rpctest.PrefixMatch("/svc.A/"), "x-env", "canary"), canary)),
		rpctest.Route(fraction(rpctest.PrefixMatch("/svc.A/"), 0), rpctest.ToCluster("B")),
		rpctest.Route(rpctest.PrefixMatch("/svc.A/"), weighted),
		named("half", rpctest.Route(fraction(rpctest.PrefixMatch("/svc.F/"), 50), rpctest.ToCluster("B"))),
		rpctest.Route(rpctest.PrefixMatch("/svc.F/"), rpctest.ToCluster("A")),
		rpctest.Route(rpctest.PrefixMatch("/svc.L/"), rpctest.ToCluster("loop")),
		&routev3.Route{Match: rpctest.PrefixMatch("/svc.N/"), Action: &routev3.Route_NonForwardingAction{NonForwardingAction: &routev3.NonForwardingAction{}}},
	)
}

// startExplainEnv serves explainRouteConfig over clusters A and B (a
// backend each) and an aggregate loop, and returns a channel to its
// listener, dialled with opts, and the channel's first config.
func startExplainEnv(t *testing.T, opts ...xdsgrpc.Option) (*rpctest.Env, *grpc.ClientConn, *xdsconfig.Config) {
	t.Helper()
	configs := make(chan *xdsconfig.Config, 10)
	opts = append(opts, xdsgrpc.WithHooks(&xdsgrpc.Hooks{ConfigChanged: func(i xdsgrpc.ConfigInfo) { configs <- i.Config }}))
	e := rpctest.NewEnv(t, 2, opts...)
	e.Set(controlplane.Listener("L", "R"), explainRouteConfig(),
		controlplane.Cluster("A", ""), controlplane.Cluster("B", ""),
		controlplane.AggregateCluster("loop", "loop2"), controlplane.AggregateCluster("loop2", "loop"),
		controlplane.Endpoints("A", e.Addr(0)), controlplane.Endpoints("B", e.Addr(1)))
	conn := e.Dial("xdslens:///L")
	conn.Connect()
	select {
	case cfg := <-configs:
		return e, conn, cfg
	case <-xdstest.Context(t).Done():
		t.Fatal("no config")
		return nil, nil, nil
	}
}

// TestExplainAgreesWithRPCs explains RPCs of every kind, with a config
// (Explain) and with the live channel (Builder.Explain), and sends each
// through that channel: the route, the cluster, the request hash and the
// error each RPC got are the ones explained.
func TestExplainAgreesWithRPCs(t *testing.T) {
	var draw atomic.Uint32
	e, conn, cfg := startExplainEnv(t, xdsgrpc.WithRoutingRand(func(n uint32) uint32 { return min(draw.Load(), n-1) }))
	ctx := xdstest.Context(t)

	for _, tc := range []struct {
		name   string
		method string
		md     []string
		draw   uint32
		// route is the index of the route that takes the RPC, -1 for
		// none; cluster the cluster; code what the RPC ends with (the
		// backends answer UNIMPLEMENTED).
		route   int
		cluster string
		code    codes.Code
		// hashKnown: Explain, without the channel's ID, knows the hash.
		hashKnown bool
	}{
		{name: "path", method: "/svc.A/Other", route: 0, cluster: "A", code: codes.Unimplemented},
		{name: "header", method: "/svc.A/M", md: []string{"x-env", "canary", "x-user", "alice"}, route: 1, cluster: "B", code: codes.Unimplemented, hashKnown: true},
		{name: "weighted first", method: "/svc.A/M", md: []string{"x-user", "bob"}, draw: 2, route: 3, cluster: "A", code: codes.Unimplemented, hashKnown: true},
		{name: "weighted second", method: "/svc.A/M", draw: 3, route: 3, cluster: "B", code: codes.Unimplemented},
		{name: "fraction taken", method: "/svc.F/M", draw: 0, route: 4, cluster: "B", code: codes.Unimplemented},
		{name: "fraction not taken", method: "/svc.F/M", draw: 999_999, route: 5, cluster: "A", code: codes.Unimplemented},
		{name: "cluster error", method: "/svc.L/M", route: 6, cluster: "loop", code: codes.Unavailable},
		{name: "non forwarding", method: "/svc.N/M", route: 7, code: codes.Unavailable},
		{name: "no route", method: "/other.Svc/M", route: -1, code: codes.Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			draw.Store(tc.draw)
			md := metadata.Pairs(tc.md...)
			fromConfig, err := xdsgrpc.Explain(cfg, tc.method, md)
			if err != nil {
				t.Fatal(err)
			}
			live, err := e.Builder.Explain(conn, tc.method, md)
			if err != nil {
				t.Fatal(err)
			}
			var info xdsgrpc.CallInfo
			rpcErr := conn.Invoke(xdsgrpc.WithCallInfo(metadata.NewOutgoingContext(ctx, md), &info), tc.method, &emptypb.Empty{}, &emptypb.Empty{})
			route, hash, hasHash := xdsgrpc.CallDecision(&info)
			if route >= 0 {
				// The RPC's route by its index as received, as Explain gives it.
				route = cfg.VirtualHost.Routes[route].Index
			}
			if route != tc.route || info.Cluster != tc.cluster || status.Code(rpcErr) != tc.code {
				t.Fatalf("RPC: route %d, cluster %q, %v; the test expects route %d, cluster %q, %v", route, info.Cluster, rpcErr, tc.route, tc.cluster, tc.code)
			}
			for _, x := range []struct {
				name string
				e    *xdsgrpc.Explanation
			}{{"Explain", fromConfig}, {"Builder.Explain", live}} {
				e := x.e
				if got := explainedRoute(e, tc.draw); got != route {
					t.Errorf("%s: route %d, the RPC's %d; %s", x.name, got, route, e.Reason)
				}
				if got := explainedCluster(e, tc.draw); got != info.Cluster {
					t.Errorf("%s: cluster %q, the RPC's %q; %s", x.name, got, info.Cluster, e.Reason)
				}
				if e.Outcome != xdsgrpc.PickSent {
					if rpcErr == nil || e.Err == nil || status.Convert(e.Err).Message() != status.Convert(rpcErr).Message() || status.Code(e.Err) != codes.Unavailable {
						t.Errorf("%s: %v fails with %v, the RPC with %v", x.name, e.Outcome, e.Err, rpcErr)
					}
				} else if e.Err != nil {
					t.Errorf("%s: sent with error %v", x.name, e.Err)
				}
				if e.VirtualHost != "R-vh" || e.Listener != "L" || e.RouteConfig != "R" || e.Method != tc.method {
					t.Errorf("%s: %+v", x.name, e)
				}
			}
			// The hash: the live channel knows its ID, Explain only when no
			// policy evaluated hashes it.
			if live.HasHash != hasHash || live.Hash != hash || live.HashDependsOnChannel {
				t.Errorf("Builder.Explain: hash %#x (%v), the RPC's %#x (%v)", live.Hash, live.HasHash, hash, hasHash)
			}
			switch {
			case tc.hashKnown:
				if !fromConfig.HasHash || fromConfig.Hash != hash || fromConfig.HashDependsOnChannel {
					t.Errorf("Explain: hash %#x (%v), the RPC's %#x", fromConfig.Hash, fromConfig.HasHash, hash)
				}
			case hasHash:
				if fromConfig.HasHash || !fromConfig.HashDependsOnChannel {
					t.Errorf("Explain: hash %#x (%v), want it to depend on the channel's ID", fromConfig.Hash, fromConfig.HasHash)
				}
			}
		})
	}
}

// explainedRoute returns the index of the route e says an RPC whose
// random draws are all draw takes: e.Route, or, past a runtime_fraction
// that the draw misses, the next route that can take it.
func explainedRoute(e *xdsgrpc.Explanation, draw uint32) int {
	for _, tr := range e.Trials {
		if tr.Chance > 0 && float64(draw) < tr.Chance*1e6 {
			return tr.Index
		}
	}
	return -1
}

// explainedCluster returns the cluster e's choices give to the draw, as
// the route draws: the choice whose cumulative weight range holds it.
func explainedCluster(e *xdsgrpc.Explanation, draw uint32) string {
	if e.Route == nil || explainedRoute(e, draw) != e.Route.Index {
		// Past a runtime fraction: the test's routes there go to one
		// cluster, named in the action.
		for _, tr := range e.Trials {
			if tr.Index == explainedRoute(e, draw) {
				return strings.Trim(strings.TrimPrefix(tr.Action, "cluster "), `"`)
			}
		}
		return ""
	}
	var cum uint32
	for _, c := range e.Choices {
		cum += c.Weight
		if min(draw, c.Total-1) < cum {
			return c.Name
		}
	}
	return ""
}

// TestExplainReason checks the words of an explanation and its plan.
func TestExplainReason(t *testing.T) {
	e, _, cfg := startExplainEnv(t)
	explain := func(method string, kv ...string) *xdsgrpc.Explanation {
		t.Helper()
		x, err := xdsgrpc.Explain(cfg, method, metadata.Pairs(kv...))
		if err != nil {
			t.Fatal(err)
		}
		return x
	}

	x := explain("/svc.A/M", "x-env", "canary", "x-user", "alice")
	if x.Timeout != 5*time.Second || x.Retry == nil || x.Retry.MaxAttempts != 3 ||
		!slices.Equal(x.Retry.On, []codes.Code{codes.Canceled, codes.Unavailable}) {
		t.Errorf("plan: timeout %v, retry %+v; want 5s, 3 attempts on CANCELLED and UNAVAILABLE", x.Timeout, x.Retry)
	}
	if len(x.Choices) != 1 || x.Choices[0].Type != "eds" || x.Choices[0].Policy != "round_robin" {
		t.Errorf("choices %+v, want cluster B, eds round_robin", x.Choices)
	}
	for _, want := range []string{
		`route canary (prefix "/svc.A/", header "x-env" exact "canary") is the first that matches /svc.A/M`,
		`the routes before it do not: route other (path "/svc.A/Other"): the path does not match; it sends`,
		`it sends it to cluster "B" (eds round_robin)`,
		fmt.Sprintf(`request hash %#016x from header "x-user"`, x.Hash),
		"deadline at most 5s", "retried on [Canceled Unavailable], at most 3 attempts",
	} {
		if !strings.Contains(x.Reason, want) {
			t.Errorf("reason %q\nlacks %q", x.Reason, want)
		}
	}

	x = explain("/svc.A/M", "x-env", "prod")
	if x.Route == nil || x.Route.Index != 3 || x.Route.Label() != "#3" || len(x.Trials) != 4 {
		t.Fatalf("route %+v after %d trials, want #3 after 4", x.Route, len(x.Trials))
	}
	for _, want := range []string{
		`route canary (prefix "/svc.A/", header "x-env" exact "canary"): header "x-env" exact "canary" does not match "prod"`,
		`route #2 (prefix "/svc.A/", runtime_fraction 0%): its matchers match, but its runtime_fraction is 0%`,
		`it draws its cluster at random, by weight: "A" 3/4 (75%) (eds round_robin), "B" 1/4 (25%) (eds round_robin)`,
		`its request hash depends on the channel's random ID (header "x-user" (terminal), channel_id)`,
	} {
		if !strings.Contains(x.Reason, want) {
			t.Errorf("reason %q\nlacks %q", x.Reason, want)
		}
	}

	x = explain("/svc.F/M")
	if !strings.Contains(x.Reason, "for 50% of such RPCs (runtime_fraction); the others go to route #5") {
		t.Errorf("reason %q: want the fraction and where the others go", x.Reason)
	}
	x = explain("/svc.L/M")
	if x.Outcome != xdsgrpc.PickClusterError || !strings.Contains(x.Reason, `it sends it to cluster "loop", which fails it: `) {
		t.Errorf("%v: %q", x.Outcome, x.Reason)
	}
	x = explain("/svc.N/M")
	if x.Outcome != xdsgrpc.PickUnsupportedAction || !strings.Contains(x.Reason, "its action, non_forwarding_action (cannot forward), cannot forward the RPC") {
		t.Errorf("%v: %q", x.Outcome, x.Reason)
	}
	x = explain("/none/M")
	if x.Outcome != xdsgrpc.PickNoRoute || x.Route != nil || len(x.Trials) != 8 || !strings.HasPrefix(x.Reason, `no route of virtual host "R-vh" matches /none/M: route other`) {
		t.Errorf("%v after %d trials: %q", x.Outcome, len(x.Trials), x.Reason)
	}

	if _, err := xdsgrpc.Explain(nil, "/a/b", nil); err == nil {
		t.Error("Explain(nil) did not fail")
	}
	other, err := grpc.NewClient("xdslens:///other", grpc.WithResolvers(e.Builder), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := e.Builder.Explain(other, "/a/b", nil); err == nil {
		t.Error("Builder.Explain of a channel that is not resolved did not fail")
	}
}
