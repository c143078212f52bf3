package xdsresource

import (
	"testing"

	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/filterconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/rls"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"
)

// elsewhere returns a copy of a with its type URL's prefix replaced by
// another host's, which gRPC C-core does not read.
func elsewhere(t *testing.T, a *anypb.Any) *anypb.Any {
	t.Helper()
	b := proto.Clone(a).(*anypb.Any)
	b.TypeUrl = "example.com/types/" + string(a.MessageName())
	return b
}

// TestTypeURLPrefixNotRead: as in gRPC C-core (ExtractXdsExtension), a
// type URL names the type after its last "/", whatever host comes before
// it: the api_listener, HTTP filters, the FilterConfig wrapper, overrides
// and cluster specifier plugins are found by it, and kept with the
// canonical type URL (grpc-go requires type.googleapis.com/).
func TestTypeURLPrefixNotRead(t *testing.T) {
	fault := httpFilter(t, "fault", &faultv3.HTTPFault{})
	fault.GetTypedConfig().TypeUrl = "example.com/envoy.extensions.filters.http.fault.v3.HTTPFault"
	router := routerFilter(t)
	router.ConfigType = &hcmv3.HttpFilter_TypedConfig{TypedConfig: elsewhere(t, router.GetTypedConfig())}
	hcm := rdsHCM(t)
	hcm.HttpFilters = []*hcmv3.HttpFilter{fault, router}
	l := apiListener(t, hcm)
	l.ApiListener.ApiListener = elsewhere(t, l.ApiListener.ApiListener)
	_, v, err := decode(t, ListenerType, l)
	if err != nil {
		t.Fatalf("Decode Listener: %v", err)
	}
	fs := v.(*Listener).HTTPFilters
	if len(fs) != 2 || fs[0].TypeURL != filterconfig.FaultTypeURL || fs[0].Config.GetTypeUrl() != filterconfig.FaultTypeURL ||
		fs[1].TypeURL != filterconfig.RouterTypeURL || fs[1].Config.GetTypeUrl() != filterconfig.RouterTypeURL {
		t.Errorf("HTTPFilters = %+v, want fault and router under their canonical type URLs", fs)
	}

	plugin := rlsPlugin("rls", "pkg.Svc", "dns:///rls.example.com:443", 10)
	plugin.Extension.TypedConfig.TypeUrl = "example.com/grpc.lookup.v1.RouteLookupClusterSpecifier"
	r := prefixRoute("/", "c1")
	r.TypedPerFilterConfig = map[string]*anypb.Any{
		"fault": elsewhere(t, toAny(t, &routev3.FilterConfig{Config: elsewhere(t, toAny(t, &faultv3.HTTPFault{}))})),
	}
	m := routeConfig(pluginRoute("rls"), r)
	m.ClusterSpecifierPlugins = []*routev3.ClusterSpecifierPlugin{plugin}
	_, v, err = decode(t, RouteConfigType, m)
	if err != nil {
		t.Fatalf("Decode RouteConfiguration: %v", err)
	}
	rc := v.(*routeconfig.Config)
	if rc.ClusterSpecifierPlugins["rls"] == nil {
		t.Errorf("ClusterSpecifierPlugins = %v, want the RLS plugin rls", rc.ClusterSpecifierPlugins)
	}
	if o := rc.VirtualHosts[0].Routes[1].FilterOverrides["fault"]; o.TypeURL != filterconfig.FaultTypeURL || o.Config.GetTypeUrl() != filterconfig.FaultTypeURL {
		t.Errorf("override fault = %+v, want an HTTPFault under its canonical type URL", o)
	}
}

// TestTypeURLsNamingNoType: a type URL that is empty, has no "/" or ends
// with one names no type, and is rejected wherever gRPC C-core reads one,
// even where is_optional would excuse a type gRPC does not know; so is a
// TypedStruct naming none, and an RLS plugin's config in a TypedStruct,
// which gRPC reads only from its own message (grpc-go skips all of these
// when optional).
func TestTypeURLsNamingNoType(t *testing.T) {
	optionalFilter := func(cfg *anypb.Any) func() proto.Message {
		return func() proto.Message {
			hcm := rdsHCM(t)
			hcm.HttpFilters = append([]*hcmv3.HttpFilter{anyFilter("x", cfg, true)}, hcm.HttpFilters...)
			return apiListener(t, hcm)
		}
	}
	inStructNamed := func(url string) *anypb.Any {
		return toAny(t, &xdstypev3.TypedStruct{TypeUrl: url, Value: &structpb.Struct{}})
	}
	listener := func(api *anypb.Any) func() proto.Message {
		return func() proto.Message {
			l := apiListener(t, rdsHCM(t))
			l.ApiListener.ApiListener = api
			return l
		}
	}
	runErrorCases(t, ListenerType, "l1", []errorCase{
		{name: "optional filter of an empty type URL", build: optionalFilter(rawAny("", "")),
			want: `lds "l1": http_filters[0] "x": type_url: not set`},
		{name: "optional filter of a type URL without a slash", build: optionalFilter(rawAny("a.B", "")),
			want: `lds "l1": http_filters[0] "x": type_url: "a.B" names no type (want PREFIX/TYPE)`},
		{name: "optional filter of a TypedStruct naming no type", build: optionalFilter(inStructNamed("a.B/")),
			want: `lds "l1": http_filters[0] "x": TypedStruct: type_url: "a.B/" names no type (want PREFIX/TYPE)`},
		{name: "api_listener without one", build: listener(nil),
			want: `lds "l1": api_listener.api_listener: missing`},
		{name: "api_listener of an empty type URL", build: listener(rawAny("", "")),
			want: `lds "l1": api_listener.api_listener: type_url: not set`},
	})

	optionalPlugin := func(cfg *anypb.Any) func() proto.Message {
		return func() proto.Message {
			m := routeConfig(prefixRoute("/", "c1"))
			m.ClusterSpecifierPlugins = []*routev3.ClusterSpecifierPlugin{{
				Extension: &corev3.TypedExtensionConfig{Name: "p", TypedConfig: cfg}, IsOptional: true}}
			return m
		}
	}
	withOverride := func(cfg *anypb.Any) func() proto.Message {
		return func() proto.Message {
			m := routeConfig(prefixRoute("/", "c1"))
			m.VirtualHosts[0].TypedPerFilterConfig = map[string]*anypb.Any{"f": cfg}
			return m
		}
	}
	runErrorCases(t, RouteConfigType, "r1", []errorCase{
		{name: "optional plugin of an empty type URL", build: optionalPlugin(rawAny("", "")),
			want: `rds "r1": cluster_specifier_plugins[0] "p": extension.typed_config: type_url: not set`},
		{name: "optional RLS plugin in a TypedStruct", build: optionalPlugin(inStructNamed(rls.ClusterSpecifierTypeURL)),
			want: `rds "r1": cluster_specifier_plugins[0] "p": extension.typed_config: a config of type "` + rls.ClusterSpecifierTypeURL + `" in a TypedStruct is not supported`},
		{name: "override of a type URL ending with a slash", build: withOverride(rawAny("example.com/", "")),
			want: `rds "r1": virtual_hosts[0].typed_per_filter_config["f"]: type_url: "example.com/" names no type (want PREFIX/TYPE)`},
		{name: "optional override of an empty type URL", build: withOverride(toAny(t, &routev3.FilterConfig{Config: rawAny("", ""), IsOptional: true})),
			want: `rds "r1": virtual_hosts[0].typed_per_filter_config["f"]: type_url: not set`},
	})
}
