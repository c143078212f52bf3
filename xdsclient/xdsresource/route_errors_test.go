package xdsresource

import (
	"strconv"
	"testing"
	"time"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultcommonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/common/fault/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestRouteConfigErrors: each RouteConfiguration below is rejected, with
// an error that names the field and the value.
func TestRouteConfigErrors(t *testing.T) {
	// withRoute builds "r1" whose only virtual host has a valid route
	// followed by r, so that errors name routes[1].
	withRoute := func(r *routev3.Route) func() proto.Message {
		return func() proto.Message { return routeConfig(prefixRoute("/", "c1"), r) }
	}
	routeMatching := func(match *routev3.RouteMatch) func() proto.Message {
		r := prefixRoute("", "c1")
		r.Match = match
		return withRoute(r)
	}
	withHeader := func(h *routev3.HeaderMatcher) func() proto.Message {
		return routeMatching(&routev3.RouteMatch{
			PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"},
			Headers:       []*routev3.HeaderMatcher{h},
		})
	}
	withAction := func(a *routev3.RouteAction) func() proto.Message {
		r := prefixRoute("/", "")
		r.Action = &routev3.Route_Route{Route: a}
		return withRoute(r)
	}
	stringMatch := func(sm *matcherv3.StringMatcher) *routev3.HeaderMatcher {
		return &routev3.HeaderMatcher{Name: "h", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: sm}}
	}
	withVHost := func(edit func(*routev3.VirtualHost)) func() proto.Message {
		return func() proto.Message {
			m := routeConfig(prefixRoute("/", "c1"))
			edit(m.VirtualHosts[0])
			return m
		}
	}
	const at = `rds "r1": virtual_hosts[0].routes[1]: `
	runErrorCases(t, RouteConfigType, "r1", []errorCase{
		{
			name:  "no domains",
			build: withVHost(func(vh *routev3.VirtualHost) { vh.Domains = nil }),
			want:  `rds "r1": virtual_hosts[0]: domains is empty`,
		},
		{
			name:  "star in the middle of a domain",
			build: withVHost(func(vh *routev3.VirtualHost) { vh.Domains = []string{"a.com", "a.*.com"} }),
			want:  `rds "r1": virtual_hosts[0].domains[1]: invalid domain pattern "a.*.com"`,
		},
		{
			name:  "empty domain",
			build: withVHost(func(vh *routev3.VirtualHost) { vh.Domains = []string{""} }),
			want:  `rds "r1": virtual_hosts[0].domains[0]: invalid domain pattern ""`,
		},
		{
			name:  "no match",
			build: routeMatching(nil),
			want:  at + `match missing`,
		},
		{
			name:  "no path specifier",
			build: routeMatching(&routev3.RouteMatch{}),
			want:  at + `match has no path specifier (prefix, path or safe_regex)`,
		},
		{
			name:  "path_separated_prefix",
			build: routeMatching(&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_PathSeparatedPrefix{PathSeparatedPrefix: "/a"}}),
			want:  at + `match: unsupported path specifier path_separated_prefix`,
		},
		{
			name:  "bad path regex",
			build: routeMatching(&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "a("}}}),
			want:  at + "match.safe_regex: invalid regex \"a(\": error parsing regexp: missing closing ): `a(`",
		},
		{
			name:  "path regex valid only unanchored",
			build: routeMatching(&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: deepRegex}}}),
			want:  at + "match.safe_regex: invalid regex " + strconv.Quote(deepRegex) + ": anchored to match whole values: expression nests too deeply",
		},
		{
			name: "runtime_fraction bad denominator",
			build: routeMatching(&routev3.RouteMatch{
				PathSpecifier:   &routev3.RouteMatch_Prefix{Prefix: "/"},
				RuntimeFraction: &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{Numerator: 1, Denominator: 7}},
			}),
			want: at + `match.runtime_fraction.default_value: unsupported denominator 7`,
		},
		{
			name:  "bad header regex",
			build: withHeader(&routev3.HeaderMatcher{Name: "h", HeaderMatchSpecifier: &routev3.HeaderMatcher_SafeRegexMatch{SafeRegexMatch: &matcherv3.RegexMatcher{Regex: "*"}}}),
			want:  at + "match.headers[0]: invalid regex \"*\": error parsing regexp: missing argument to repetition operator: `*`",
		},
		{
			name:  "header range end before start",
			build: withHeader(&routev3.HeaderMatcher{Name: "h", HeaderMatchSpecifier: &routev3.HeaderMatcher_RangeMatch{RangeMatch: &typev3.Int64Range{Start: 5, End: 1}}}),
			want:  at + `match.headers[0]: range_match end 1 is less than start 5`,
		},
		{
			name:  "header regex valid only anchored",
			build: withHeader(stringMatch(&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "a)|(b"}}})),
			want:  at + "match.headers[0]: invalid regex \"a)|(b\": error parsing regexp: unexpected ): `a)|(b`",
		},
		{
			name:  "string_match custom",
			build: withHeader(stringMatch(&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Custom{Custom: &xdscorev3.TypedExtensionConfig{Name: "c"}}})),
			want:  at + `match.headers[0]: string_match: match pattern custom is not supported`,
		},
		{
			name:  "string_match without pattern",
			build: withHeader(stringMatch(&matcherv3.StringMatcher{})),
			want:  at + `match.headers[0]: string_match: no match pattern is set`,
		},
		{
			name:  "header matcher without specifier",
			build: withHeader(&routev3.HeaderMatcher{Name: "h"}),
			want:  at + `match.headers[0]: no header match specifier is set`,
		},
		{
			name:  "empty cluster",
			build: withAction(&routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{}}),
			want:  at + `route.cluster is empty`,
		},
		{
			name: "weighted_clusters sum to 0",
			build: func() proto.Message {
				r := prefixRoute("/", "")
				r.Action = weighted("a", uint32(0))
				return routeConfig(prefixRoute("/", "c1"), prefixRoute("/x", "c1"), r)
			},
			want: `rds "r1": virtual_hosts[0].routes[2]: weighted_clusters weights sum to 0`,
		},
		{
			name: "weighted_clusters overflow",
			build: func() proto.Message {
				r := prefixRoute("/", "")
				r.Action = weighted("a", uint32(4_000_000_000), "b", uint32(400_000_000))
				return routeConfig(prefixRoute("/", "c1"), r)
			},
			want: at + `weighted_clusters weights sum to more than 4294967295`,
		},
		{
			name: "weighted cluster without name",
			build: func() proto.Message {
				r := prefixRoute("/", "")
				r.Action = weighted("a", uint32(1), "", uint32(1))
				return routeConfig(prefixRoute("/", "c1"), r)
			},
			want: at + `weighted_clusters.clusters[1]: name is empty`,
		},
		{
			name:  "unknown cluster_specifier_plugin",
			build: withAction(&routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_ClusterSpecifierPlugin{ClusterSpecifierPlugin: "rls"}}),
			want:  at + `route.cluster_specifier_plugin "rls" is not in cluster_specifier_plugins`,
		},
		{
			name: "required cluster_specifier_plugin",
			build: func() proto.Message {
				m := routeConfig(prefixRoute("/", "c1"))
				m.ClusterSpecifierPlugins = []*routev3.ClusterSpecifierPlugin{{
					Extension: &corev3.TypedExtensionConfig{Name: "rls", TypedConfig: toAny(t, &structpb.Struct{})},
				}}
				return m
			},
			want: `rds "r1": cluster_specifier_plugins[0] "rls": unsupported plugin type "type.googleapis.com/google.protobuf.Struct"`,
		},
		{
			name: "bad hash policy regex",
			build: withAction(&routev3.RouteAction{
				ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "c1"},
				HashPolicy: []*routev3.RouteAction_HashPolicy{{PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{Header: &routev3.RouteAction_HashPolicy_Header{
					HeaderName: "h", RegexRewrite: &matcherv3.RegexMatchAndSubstitute{Pattern: &matcherv3.RegexMatcher{Regex: "("}},
				}}}},
			}),
			want: at + "route.hash_policy[0]: header.regex_rewrite: invalid regex \"(\": error parsing regexp: missing closing ): `(`",
		},
		{
			name: "hash policy without a header name",
			build: withAction(&routev3.RouteAction{
				ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "c1"},
				HashPolicy:       []*routev3.RouteAction_HashPolicy{{PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{Header: &routev3.RouteAction_HashPolicy_Header{}}}},
			}),
			want: at + "route.hash_policy[0]: header.header_name is empty",
		},
		{
			name: "hash policy regex_rewrite without a pattern",
			build: withAction(&routev3.RouteAction{
				ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "c1"},
				HashPolicy: []*routev3.RouteAction_HashPolicy{{PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{Header: &routev3.RouteAction_HashPolicy_Header{
					HeaderName: "h", RegexRewrite: &matcherv3.RegexMatchAndSubstitute{Substitution: "x"},
				}}}},
			}),
			want: at + "route.hash_policy[0]: header.regex_rewrite.pattern.regex is empty",
		},
		{
			name: "hash policy regex_rewrite with an empty regex",
			build: withAction(&routev3.RouteAction{
				ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "c1"},
				HashPolicy: []*routev3.RouteAction_HashPolicy{{PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{Header: &routev3.RouteAction_HashPolicy_Header{
					HeaderName: "h", RegexRewrite: &matcherv3.RegexMatchAndSubstitute{Pattern: &matcherv3.RegexMatcher{}, Substitution: "x"},
				}}}},
			}),
			want: at + "route.hash_policy[0]: header.regex_rewrite.pattern.regex is empty",
		},
		{
			name: "weighted cluster without a weight",
			build: withAction(&routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_WeightedClusters{WeightedClusters: &routev3.WeightedCluster{
				Clusters: []*routev3.WeightedCluster_ClusterWeight{{Name: "a", Weight: wrapperspb.UInt32(1)}, {Name: "b"}},
			}}}),
			want: at + `weighted_clusters.clusters[1] "b": weight is not set`,
		},
		{
			name: "route retry num_retries 0",
			build: withAction(&routev3.RouteAction{
				ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "c1"},
				RetryPolicy:      &routev3.RetryPolicy{NumRetries: wrapperspb.UInt32(0)},
			}),
			want: at + `route.retry_policy.num_retries is 0, must be at least 1`,
		},
		{
			name: "vhost retry base_interval 0",
			build: withVHost(func(vh *routev3.VirtualHost) {
				vh.RetryPolicy = &routev3.RetryPolicy{RetryBackOff: &routev3.RetryPolicy_RetryBackOff{}}
			}),
			want: `rds "r1": virtual_hosts[0].retry_policy.retry_back_off.base_interval must be positive`,
		},
		{
			name: "vhost retry max_interval 0",
			build: withVHost(func(vh *routev3.VirtualHost) {
				vh.RetryPolicy = &routev3.RetryPolicy{RetryBackOff: &routev3.RetryPolicy_RetryBackOff{
					BaseInterval: durationpb.New(time.Second), MaxInterval: durationpb.New(0),
				}}
			}),
			want: `rds "r1": virtual_hosts[0].retry_policy.retry_back_off.max_interval must be positive`,
		},
		{
			name: "fault override with a negative fixed_delay",
			build: func() proto.Message {
				r := prefixRoute("/", "c1")
				r.TypedPerFilterConfig = map[string]*anypb.Any{"fault": toAny(t, &faultv3.HTTPFault{Delay: &faultcommonv3.FaultDelay{
					FaultDelaySecifier: &faultcommonv3.FaultDelay_FixedDelay{FixedDelay: &durationpb.Duration{Nanos: -1}},
				}})}
				return routeConfig(prefixRoute("/", "c1"), r)
			},
			want: at + `typed_per_filter_config["fault"]: fault: delay.fixed_delay: nanos -1 is not in [0, 999999999]`,
		},
		{
			name: "route max_stream_duration negative",
			build: withAction(&routev3.RouteAction{
				ClusterSpecifier:  &routev3.RouteAction_Cluster{Cluster: "c1"},
				MaxStreamDuration: &routev3.RouteAction_MaxStreamDuration{MaxStreamDuration: &durationpb.Duration{Seconds: -1}},
			}),
			want: at + `route.max_stream_duration.max_stream_duration: seconds -1 is not in [0, 315576000000]`,
		},
		{
			name: "route grpc_timeout_header_max beyond the largest Duration",
			build: withAction(&routev3.RouteAction{
				ClusterSpecifier:  &routev3.RouteAction_Cluster{Cluster: "c1"},
				MaxStreamDuration: &routev3.RouteAction_MaxStreamDuration{GrpcTimeoutHeaderMax: &durationpb.Duration{Seconds: 315_576_000_001}},
			}),
			want: at + `route.max_stream_duration.grpc_timeout_header_max: seconds 315576000001 is not in [0, 315576000000]`,
		},
		{
			name: "route grpc_timeout_header_max negative nanos",
			build: withAction(&routev3.RouteAction{
				ClusterSpecifier:  &routev3.RouteAction_Cluster{Cluster: "c1"},
				MaxStreamDuration: &routev3.RouteAction_MaxStreamDuration{GrpcTimeoutHeaderMax: &durationpb.Duration{Nanos: -5}},
			}),
			want: at + `route.max_stream_duration.grpc_timeout_header_max: nanos -5 is not in [0, 999999999]`,
		},
		{
			name: "vhost retry base_interval negative",
			build: withVHost(func(vh *routev3.VirtualHost) {
				vh.RetryPolicy = &routev3.RetryPolicy{RetryBackOff: &routev3.RetryPolicy_RetryBackOff{BaseInterval: &durationpb.Duration{Seconds: -3}}}
			}),
			want: `rds "r1": virtual_hosts[0].retry_policy.retry_back_off.base_interval: seconds -3 is not in [0, 315576000000]`,
		},
		{
			name: "route retry max_interval with nanos of a second",
			build: withAction(&routev3.RouteAction{
				ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "c1"},
				RetryPolicy: &routev3.RetryPolicy{RetryBackOff: &routev3.RetryPolicy_RetryBackOff{
					BaseInterval: durationpb.New(time.Second), MaxInterval: &durationpb.Duration{Seconds: 1, Nanos: 1_000_000_000},
				}},
			}),
			want: at + `route.retry_policy.retry_back_off.max_interval: nanos 1000000000 is not in [0, 999999999]`,
		},
		{
			name: "unsupported filter override on vhost",
			build: withVHost(func(vh *routev3.VirtualHost) {
				vh.TypedPerFilterConfig = map[string]*anypb.Any{"x": toAny(t, &structpb.Struct{})}
			}),
			want: `rds "r1": virtual_hosts[0].typed_per_filter_config["x"]: unsupported filter override type "type.googleapis.com/google.protobuf.Struct"`,
		},
		{
			name: "router config as a filter override on a route",
			build: func() proto.Message {
				r := prefixRoute("/", "c1")
				r.TypedPerFilterConfig = map[string]*anypb.Any{"router": toAny(t, &routerv3.Router{})}
				return routeConfig(prefixRoute("/", "c1"), r)
			},
			want: at + `typed_per_filter_config["router"]: the router filter takes no config override`,
		},
		{
			name: "unsupported filter override on a weighted cluster",
			build: func() proto.Message {
				r := prefixRoute("/", "")
				a := weighted("a", uint32(1))
				a.Route.GetWeightedClusters().Clusters[0].TypedPerFilterConfig = map[string]*anypb.Any{
					"x": toAny(t, &routev3.FilterConfig{Config: toAny(t, &structpb.Struct{})}),
				}
				r.Action = a
				return routeConfig(prefixRoute("/", "c1"), r)
			},
			want: at + `weighted_clusters.clusters[0]: typed_per_filter_config["x"]: unsupported filter override type "type.googleapis.com/google.protobuf.Struct"`,
		},
	})
}
