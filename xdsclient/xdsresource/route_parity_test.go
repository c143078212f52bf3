package xdsresource

import (
	"slices"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"
)

// badHeader is a header matcher gRPC rejects, and badOverride a
// typed_per_filter_config entry it rejects: in a route gRPC ignores
// before it reads them, they reject nothing.
var (
	badHeader   = &routev3.HeaderMatcher{Name: "h"}
	badOverride = map[string]*anypb.Any{"": {TypeUrl: "type.googleapis.com/google.protobuf.Struct"}}
)

// keptRoutes decodes m and returns the names of the routes of its first
// virtual host.
func keptRoutes(t *testing.T, m *routev3.RouteConfiguration) []string {
	t.Helper()
	_, v, err := decode(t, RouteConfigType, m)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	var names []string
	for _, r := range v.(*routeconfig.Config).VirtualHosts[0].Routes {
		names = append(names, r.Name)
	}
	return names
}

// TestRoutePathsNoGRPCMethodHas: a route whose prefix or path no gRPC
// method path ("/service/method") can match is ignored, as gRPC C-core's
// RoutePathMatchParse ignores it, before anything else of it is read: a
// bad header matcher or filter override in it rejects nothing. grpc-go
// keeps such routes, which then never match.
func TestRoutePathsNoGRPCMethodHas(t *testing.T) {
	for _, tc := range []struct {
		name string
		path *routev3.RouteMatch
		kept bool
	}{
		{"empty prefix", &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: ""}}, true},
		{"prefix /", &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}, true},
		{"prefix of a service", &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/pkg.Svc/"}}, true},
		{"prefix of a method", &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/pkg.Svc/Me"}}, true},
		{"prefix without a leading slash", &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "pkg.Svc/"}}, false},
		{"prefix with two slashes in a row", &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "//M"}}, false},
		{"prefix with three slashes", &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/pkg.Svc/M/"}}, false},
		{"path of a method", &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: "/pkg.Svc/M"}}, true},
		{"empty path", &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: ""}}, false},
		{"path without a leading slash", &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: "pkg.Svc/M"}}, false},
		{"path of a service", &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: "/pkg.Svc"}}, false},
		{"path with an empty method", &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: "/pkg.Svc/"}}, false},
		{"path with an empty service", &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: "//M"}}, false},
		{"path with three slashes", &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: "/pkg.Svc/M/x"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := prefixRoute("", "c1")
			r.Name = "r"
			r.Match = tc.path
			if got := keptRoutes(t, routeConfig(r, prefixRoute("/", "c2"))); slices.Contains(got, "r") != tc.kept {
				t.Errorf("routes kept %q, want route r kept: %v", got, tc.kept)
			}
			if tc.kept {
				return
			}
			r.Match.Headers = []*routev3.HeaderMatcher{badHeader}
			r.TypedPerFilterConfig = badOverride
			if got := keptRoutes(t, routeConfig(r, prefixRoute("/", "c2"))); len(got) != 1 {
				t.Errorf("routes kept %q, want only the route to c2", got)
			}
		})
	}
}

// TestRouteIgnoredForItsClusterSpecifier: a route whose cluster specifier
// gRPC ignores (cluster_header, an optional plugin of an unknown type,
// none) is validated as gRPC C-core's RouteActionParse validates it: its
// matchers, max_stream_duration, hash_policy and retry_policy, read before
// the cluster specifier, reject the resource; its typed_per_filter_config,
// read after, is not read. A cluster_header route is kept, never matching,
// whatever its header (an empty one included).
func TestRouteIgnoredForItsClusterSpecifier(t *testing.T) {
	specifiers := map[string]*routev3.RouteAction{
		"cluster_header":          {ClusterSpecifier: &routev3.RouteAction_ClusterHeader{}},
		"optional unknown plugin": {ClusterSpecifier: &routev3.RouteAction_ClusterSpecifierPlugin{ClusterSpecifierPlugin: "opt"}},
		"no cluster specifier":    {},
	}
	build := func(cs *routev3.RouteAction, edit func(*routev3.Route)) *routev3.RouteConfiguration {
		r := prefixRoute("/", "")
		r.Name = "r"
		r.Action = &routev3.Route_Route{Route: proto.Clone(cs).(*routev3.RouteAction)}
		edit(r)
		m := routeConfig(r, prefixRoute("/", "c2"))
		m.ClusterSpecifierPlugins = []*routev3.ClusterSpecifierPlugin{{
			Extension:  &corev3.TypedExtensionConfig{Name: "opt", TypedConfig: toAny(t, &structpb.Struct{})},
			IsOptional: true,
		}}
		return m
	}
	const at = `rds "r1": virtual_hosts[0].routes[0]: `
	for name, cs := range specifiers {
		t.Run(name, func(t *testing.T) {
			got := keptRoutes(t, build(cs, func(r *routev3.Route) { r.TypedPerFilterConfig = badOverride }))
			if want := name == "cluster_header"; slices.Contains(got, "r") != want {
				t.Errorf("routes kept %q, want route r kept: %v", got, want)
			}
			if name == "cluster_header" {
				// Kept for those who describe routes, its overrides are
				// not read as C-core does not read them.
				return
			}
			runErrorCases(t, RouteConfigType, "r1", []errorCase{
				{name: "bad header", build: func() proto.Message {
					return build(cs, func(r *routev3.Route) { r.Match.Headers = []*routev3.HeaderMatcher{badHeader} })
				}, want: at + `match.headers[0]: no header match specifier is set`},
				{name: "negative max_stream_duration", build: func() proto.Message {
					return build(cs, func(r *routev3.Route) {
						r.GetRoute().MaxStreamDuration = &routev3.RouteAction_MaxStreamDuration{MaxStreamDuration: &durationpb.Duration{Seconds: -1}}
					})
				}, want: at + `route.max_stream_duration.max_stream_duration: seconds -1 is not in [0, 315576000000]`},
				{name: "hash policy without header name", build: func() proto.Message {
					return build(cs, func(r *routev3.Route) {
						r.GetRoute().HashPolicy = []*routev3.RouteAction_HashPolicy{{PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{Header: &routev3.RouteAction_HashPolicy_Header{}}}}
					})
				}, want: at + `route.hash_policy[0]: header.header_name is empty`},
				{name: "retry policy of no retries", build: func() proto.Message {
					return build(cs, func(r *routev3.Route) {
						r.GetRoute().RetryPolicy = &routev3.RetryPolicy{NumRetries: wrapperspb.UInt32(0)}
					})
				}, want: at + `route.retry_policy.num_retries is 0, must be at least 1`},
			})
		})
	}
	t.Run("cluster_header validated", func(t *testing.T) {
		runErrorCases(t, RouteConfigType, "r1", []errorCase{{
			name: "retry policy of no retries",
			build: func() proto.Message {
				return build(specifiers["cluster_header"], func(r *routev3.Route) {
					r.GetRoute().RetryPolicy = &routev3.RetryPolicy{NumRetries: wrapperspb.UInt32(0)}
				})
			},
			want: at + `route.retry_policy.num_retries is 0, must be at least 1`,
		}})
	})
}

// TestRuntimeFractionWithoutDefault: a runtime_fraction without
// default_value leaves the route matching every request, as in gRPC
// C-core, which reads no fraction then; grpc-go reads a fraction of 0, and
// the route matches none.
func TestRuntimeFractionWithoutDefault(t *testing.T) {
	r := prefixRoute("/", "c1")
	r.Match.RuntimeFraction = &corev3.RuntimeFractionalPercent{RuntimeKey: "k"}
	_, v, err := decode(t, RouteConfigType, routeConfig(r))
	if err != nil {
		t.Fatal(err)
	}
	if f := v.(*routeconfig.Config).VirtualHosts[0].Routes[0].FractionPerMillion; f != nil {
		t.Errorf("FractionPerMillion = %d, want nil (every request)", *f)
	}
	r.Match.RuntimeFraction.DefaultValue = &typev3.FractionalPercent{Numerator: 0}
	_, v, err = decode(t, RouteConfigType, routeConfig(r))
	if err != nil {
		t.Fatal(err)
	}
	if f := v.(*routeconfig.Config).VirtualHosts[0].Routes[0].FractionPerMillion; f == nil || *f != 0 {
		t.Errorf("FractionPerMillion = %v, want 0 for a default_value of 0%%", f)
	}
}

// TestRetryOnComparedAsWritten: retry_on conditions are compared as they
// are written between the commas, as gRPC C-core compares them: a
// condition with spaces around it or in upper case is one gRPC does not
// know, and is ignored (grpc-go trims and lower-cases them).
func TestRetryOnComparedAsWritten(t *testing.T) {
	r := prefixRoute("/", "c1")
	r.GetRoute().RetryPolicy = &routev3.RetryPolicy{RetryOn: "Unavailable, cancelled,internal ,deadline-exceeded,resource-exhausted"}
	_, v, err := decode(t, RouteConfigType, routeConfig(r))
	if err != nil {
		t.Fatal(err)
	}
	got := v.(*routeconfig.Config).VirtualHosts[0].Routes[0].RetryPolicy.RetryOn
	if want := []string{"deadline-exceeded", "resource-exhausted"}; !slices.Equal(got, want) {
		t.Errorf("RetryOn = %q, want %q", got, want)
	}
}

// TestClusterSpecifierPluginRules: as gRPC C-core's
// ClusterSpecifierPluginParse has it, a plugin needs its extension and
// its typed_config, optional or not, and no two plugins share a name; a
// route naming the empty plugin is rejected (grpc-go takes the last of
// two plugins of one name, and skips an optional one without a config).
func TestClusterSpecifierPluginRules(t *testing.T) {
	optional := func(name string, cfg *anypb.Any) *routev3.ClusterSpecifierPlugin {
		return &routev3.ClusterSpecifierPlugin{Extension: &corev3.TypedExtensionConfig{Name: name, TypedConfig: cfg}, IsOptional: true}
	}
	withPlugins := func(route string, ps ...*routev3.ClusterSpecifierPlugin) func() proto.Message {
		return func() proto.Message {
			r := prefixRoute("/", "")
			r.Action = &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_ClusterSpecifierPlugin{ClusterSpecifierPlugin: route}}}
			m := routeConfig(r, prefixRoute("/", "c1"))
			m.ClusterSpecifierPlugins = ps
			return m
		}
	}
	unknown := toAny(t, &structpb.Struct{})
	runErrorCases(t, RouteConfigType, "r1", []errorCase{
		{name: "optional plugin without extension", build: withPlugins("p", optional("p", unknown), &routev3.ClusterSpecifierPlugin{IsOptional: true}),
			want: `rds "r1": cluster_specifier_plugins[1].extension: missing`},
		{name: "optional plugin without typed_config", build: withPlugins("p", optional("p", nil)),
			want: `rds "r1": cluster_specifier_plugins[0] "p": extension.typed_config missing`},
		{name: "two optional plugins of one name", build: withPlugins("p", optional("p", unknown), optional("p", unknown)),
			want: `rds "r1": cluster_specifier_plugins[1].extension.name: duplicate name "p"`},
		{name: "route naming the empty plugin", build: withPlugins("", optional("", unknown)),
			want: `rds "r1": virtual_hosts[0].routes[0]: route.cluster_specifier_plugin is empty`},
	})
}

// TestFilterOverrideRules: as in gRPC C-core's ParseTypedPerFilterConfig,
// every scope's typed_per_filter_config needs a filter instance name for
// each entry, and rejects the router, which takes no override, even when
// is_optional.
func TestFilterOverrideRules(t *testing.T) {
	optionalRouter := toAny(t, &routev3.FilterConfig{Config: routerFilter(t).GetTypedConfig(), IsOptional: true})
	withRouteOverrides := func(m map[string]*anypb.Any) func() proto.Message {
		return func() proto.Message {
			r := prefixRoute("/", "c1")
			r.TypedPerFilterConfig = m
			return routeConfig(r)
		}
	}
	const at = `rds "r1": virtual_hosts[0].routes[0]: `
	runErrorCases(t, RouteConfigType, "r1", []errorCase{
		{name: "optional router override", build: withRouteOverrides(map[string]*anypb.Any{"router": optionalRouter}),
			want: at + `typed_per_filter_config["router"]: the router filter takes no config override`},
		{name: "override without a name", build: withRouteOverrides(map[string]*anypb.Any{"": toAny(t, &faultv3.HTTPFault{})}),
			want: at + `typed_per_filter_config[""]: the filter instance name is empty`},
	})
}
