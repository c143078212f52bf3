package xdsresource

import (
	"reflect"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"
)

func weighted(ws ...any) *routev3.Route_Route {
	var cs []*routev3.WeightedCluster_ClusterWeight
	for i := 0; i < len(ws); i += 2 {
		cs = append(cs, &routev3.WeightedCluster_ClusterWeight{Name: ws[i].(string), Weight: wrapperspb.UInt32(ws[i+1].(uint32))})
	}
	return &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_WeightedClusters{
		WeightedClusters: &routev3.WeightedCluster{Clusters: cs},
	}}}
}

func TestRouteConfigRoundTrip(t *testing.T) {
	headerRoute := &routev3.Route{
		Name: "by-header",
		Match: &routev3.RouteMatch{
			PathSpecifier: &routev3.RouteMatch_Path{Path: "/svc/Method"},
			CaseSensitive: wrapperspb.Bool(false),
			Headers: []*routev3.HeaderMatcher{
				{Name: "X-Exact", HeaderMatchSpecifier: &routev3.HeaderMatcher_ExactMatch{ExactMatch: "v"}, InvertMatch: true},
				{Name: "x-regex", HeaderMatchSpecifier: &routev3.HeaderMatcher_SafeRegexMatch{SafeRegexMatch: &matcherv3.RegexMatcher{Regex: "a.*"}}},
				{Name: "x-present", HeaderMatchSpecifier: &routev3.HeaderMatcher_PresentMatch{PresentMatch: true}},
				{Name: "x-range", HeaderMatchSpecifier: &routev3.HeaderMatcher_RangeMatch{RangeMatch: &typev3.Int64Range{Start: 1, End: 10}}},
				{Name: "x-sm", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{
					MatchPattern: &matcherv3.StringMatcher_Suffix{Suffix: "end"}, IgnoreCase: true,
				}}},
			},
			RuntimeFraction: &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{Numerator: 25, Denominator: typev3.FractionalPercent_HUNDRED}},
		},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier:  &routev3.RouteAction_Cluster{Cluster: "c1"},
			MaxStreamDuration: &routev3.RouteAction_MaxStreamDuration{MaxStreamDuration: durationpb.New(time.Second), GrpcTimeoutHeaderMax: durationpb.New(2 * time.Second)},
			HashPolicy: []*routev3.RouteAction_HashPolicy{
				{PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{Header: &routev3.RouteAction_HashPolicy_Header{
					HeaderName: "x-user", RegexRewrite: &matcherv3.RegexMatchAndSubstitute{Pattern: &matcherv3.RegexMatcher{Regex: "^u-"}, Substitution: ""},
				}}, Terminal: true},
				{PolicySpecifier: &routev3.RouteAction_HashPolicy_FilterState_{FilterState: &routev3.RouteAction_HashPolicy_FilterState{Key: "io.grpc.channel_id"}}},
				{PolicySpecifier: &routev3.RouteAction_HashPolicy_FilterState_{FilterState: &routev3.RouteAction_HashPolicy_FilterState{Key: "other"}}},
				{PolicySpecifier: &routev3.RouteAction_HashPolicy_Cookie_{Cookie: &routev3.RouteAction_HashPolicy_Cookie{Name: "c"}}},
			},
			RetryPolicy:          &routev3.RetryPolicy{RetryOn: "unavailable,cancelled,5xx", NumRetries: wrapperspb.UInt32(3)},
			HostRewriteSpecifier: &routev3.RouteAction_AutoHostRewrite{AutoHostRewrite: wrapperspb.Bool(true)},
		}},
	}
	m := &routev3.RouteConfiguration{
		Name: "r1",
		VirtualHosts: []*routev3.VirtualHost{
			{
				Name:    "vh1",
				Domains: []string{"svc.example.com", "*.example.com", "svc.*"},
				Routes: []*routev3.Route{
					headerRoute,
					{Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "/a/.*"}}}, Action: weighted("a", uint32(1), "zero", uint32(0), "b", uint32(3))},
					{
						Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/q"}, QueryParameters: []*routev3.QueryParameterMatcher{{Name: "q"}}},
						// Ignored: matches on query parameters.
						Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "ignored"}}},
					},
					{
						Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/h"}},
						Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_ClusterHeader{ClusterHeader: "x-cluster"}}},
					},
					{
						Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/r"}},
						Action: &routev3.Route_Redirect{Redirect: &routev3.RedirectAction{}},
					},
				},
			},
			{
				Name:        "vh2",
				Domains:     []string{"*"},
				RetryPolicy: &routev3.RetryPolicy{RetryOn: "internal", RetryBackOff: &routev3.RetryPolicy_RetryBackOff{BaseInterval: durationpb.New(time.Second)}},
				Routes: []*routev3.Route{
					{Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: ""}}, Action: &routev3.Route_NonForwardingAction{NonForwardingAction: &routev3.NonForwardingAction{}}},
				},
			},
		},
	}

	fraction := uint32(250_000)
	msd := 2 * time.Second
	want := &routeconfig.Config{
		Name: "r1",
		VirtualHosts: []routeconfig.VirtualHost{
			{
				Name:    "vh1",
				Domains: []string{"svc.example.com", "*.example.com", "svc.*"},
				Routes: []routeconfig.Route{
					{
						Name:            "by-header",
						PathMatch:       routeconfig.PathExact,
						Path:            "/svc/Method",
						CaseInsensitive: true,
						Headers: []matcher.Header{
							{Name: "x-exact", Kind: matcher.Exact, Value: "v", Invert: true},
							{Name: "x-regex", Kind: matcher.Regex, Value: "a.*"},
							{Name: "x-present", Kind: matcher.Present, Present: true},
							{Name: "x-range", Kind: matcher.Range, RangeStart: 1, RangeEnd: 10},
							{Name: "x-sm", Kind: matcher.Suffix, Value: "end", IgnoreCase: true},
						},
						FractionPerMillion: &fraction,
						Action:             routeconfig.Action{Kind: routeconfig.ActionCluster, Cluster: "c1"},
						MaxStreamDuration:  &msd,
						HashPolicies: []routeconfig.HashPolicy{
							{Kind: routeconfig.HashHeader, HeaderName: "x-user", Regex: "^u-", Terminal: true},
							{Kind: routeconfig.HashChannelID},
						},
						RetryPolicy: &routeconfig.RetryPolicy{RetryOn: []string{"unavailable", "cancelled"}, NumRetries: 3, BaseInterval: 25 * time.Millisecond, MaxInterval: 250 * time.Millisecond},
						// AutoHostRewrite stays false: the server is not trusted.
					},
					{
						Index:     1,
						PathMatch: routeconfig.PathRegex,
						SafeRegex: "/a/.*",
						Action:    routeconfig.Action{Kind: routeconfig.ActionWeightedClusters, WeightedClusters: []routeconfig.WeightedCluster{{Name: "a", Weight: 1}, {Name: "b", Weight: 3}}},
					},
					// The route that matches on query parameters, at 2, is left out.
					{Index: 3, PathMatch: routeconfig.PathPrefix, Prefix: "/h", Action: routeconfig.Action{Kind: routeconfig.ActionClusterHeader, ClusterHeader: "x-cluster"}},
					{Index: 4, PathMatch: routeconfig.PathPrefix, Prefix: "/r", Action: routeconfig.Action{Kind: routeconfig.ActionUnsupported}},
				},
			},
			{
				Name:        "vh2",
				Domains:     []string{"*"},
				RetryPolicy: &routeconfig.RetryPolicy{RetryOn: []string{"internal"}, NumRetries: 1, BaseInterval: time.Second, MaxInterval: 10 * time.Second},
				Routes:      []routeconfig.Route{{PathMatch: routeconfig.PathPrefix, Action: routeconfig.Action{Kind: routeconfig.ActionNonForwarding}}},
			},
		},
	}

	name, v, err := decode(t, RouteConfigType, m)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if name != "r1" {
		t.Errorf("name = %q, want r1", name)
	}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("Decode =\n%+v\nwant\n%+v", v, want)
	}
	if s, w := v.(*routeconfig.Config).Summary(), "route config r1: 2 virtual hosts, 5 routes"; s != w {
		t.Errorf("Summary() = %q, want %q", s, w)
	}

	// From a trusted server, auto_host_rewrite is honoured.
	_, v, err = RouteConfigType.Decode(DecodeOptions{TrustedServer: true}, toAny(t, m))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if !v.(*routeconfig.Config).VirtualHosts[0].Routes[0].AutoHostRewrite {
		t.Error("AutoHostRewrite = false from a trusted server, want true")
	}
}

func TestRouteConfigFilterOverrides(t *testing.T) {
	fc := func(cfg proto.Message, optional bool) *anypb.Any {
		return toAny(t, &routev3.FilterConfig{Config: toAny(t, cfg), IsOptional: optional})
	}
	m := routeConfig(prefixRoute("/", "c1"))
	m.VirtualHosts[0].TypedPerFilterConfig = map[string]*anypb.Any{
		"fault":    toAny(t, &faultv3.HTTPFault{}),
		"rbac":     toAny(t, &rbacv3.RBACPerRoute{}),
		"optional": fc(&structpb.Struct{}, true),
		"disabled": toAny(t, &routev3.FilterConfig{Config: toAny(t, &structpb.Struct{}), IsOptional: true, Disabled: true}),
	}
	if _, _, err := decode(t, RouteConfigType, m); err != nil {
		t.Fatalf("Decode: %v", err)
	}

	// As in gRPC C-core, a FilterConfig needs its config, and disabled
	// excuses nothing.
	withOverride := func(cfg *routev3.FilterConfig) func() proto.Message {
		return func() proto.Message {
			m := routeConfig(prefixRoute("/", "c1"))
			m.VirtualHosts[0].TypedPerFilterConfig = map[string]*anypb.Any{"f": toAny(t, cfg)}
			return m
		}
	}
	const at = `rds "r1": virtual_hosts[0].typed_per_filter_config["f"]`
	runErrorCases(t, RouteConfigType, "r1", []errorCase{
		{name: "disabled without config", build: withOverride(&routev3.FilterConfig{Disabled: true}),
			want: at + `.config: missing`},
		{name: "optional without config", build: withOverride(&routev3.FilterConfig{IsOptional: true}),
			want: at + `.config: missing`},
		{name: "disabled, of a type not understood", build: withOverride(&routev3.FilterConfig{Config: toAny(t, &structpb.Struct{}), Disabled: true}),
			want: at + `: unsupported filter override type "type.googleapis.com/google.protobuf.Struct"`},
	})
}

func TestRouteConfigClusterSpecifierPlugins(t *testing.T) {
	plugin := func(name string, optional bool) *routev3.ClusterSpecifierPlugin {
		return &routev3.ClusterSpecifierPlugin{
			Extension:  &corev3.TypedExtensionConfig{Name: name, TypedConfig: toAny(t, &structpb.Struct{})},
			IsOptional: optional,
		}
	}
	pluginRoute := &routev3.Route{
		Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/p"}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_ClusterSpecifierPlugin{ClusterSpecifierPlugin: "opt"}}},
	}
	m := routeConfig(pluginRoute, prefixRoute("/", "c1"))
	m.ClusterSpecifierPlugins = []*routev3.ClusterSpecifierPlugin{plugin("opt", true)}
	_, v, err := decode(t, RouteConfigType, m)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if rs := v.(*routeconfig.Config).VirtualHosts[0].Routes; len(rs) != 1 || rs[0].Action.Cluster != "c1" {
		t.Errorf("Routes = %+v, want only the route to c1", rs)
	}
}
