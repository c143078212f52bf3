package xdsresource

import (
	"reflect"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/rls"
)

// rlsPlugin returns a RouteLookupClusterSpecifier plugin named name whose
// route_lookup_config has one key builder for service, the lookup service
// lookup and a cache of cacheSize bytes, written field by field (no Go
// package holds the message; package rls has its own tests of its rules).
func rlsPlugin(name, service, lookup string, cacheSize uint64) *routev3.ClusterSpecifierPlugin {
	bytesField := func(b []byte, num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
	}
	var svc, kb, cfg []byte
	if service != "" {
		svc = bytesField(nil, 1, []byte(service)) // Name.service
		kb = bytesField(nil, 1, svc)              // GrpcKeyBuilder.names
		cfg = bytesField(nil, 2, kb)              // RouteLookupConfig.grpc_keybuilders
	}
	if lookup != "" {
		cfg = bytesField(cfg, 3, []byte(lookup)) // lookup_service
	}
	cfg = protowire.AppendVarint(protowire.AppendTag(cfg, 7, protowire.VarintType), cacheSize) // cache_size_bytes
	spec := bytesField(nil, 1, cfg)                                                            // route_lookup_config
	return &routev3.ClusterSpecifierPlugin{Extension: &corev3.TypedExtensionConfig{
		Name:        name,
		TypedConfig: &anypb.Any{TypeUrl: rls.ClusterSpecifierTypeURL, Value: spec},
	}}
}

// pluginRoute is a route with prefix "/p" to the plugin name.
func pluginRoute(name string) *routev3.Route {
	return &routev3.Route{
		Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/p"}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_ClusterSpecifierPlugin{ClusterSpecifierPlugin: name}}},
	}
}

// TestRouteConfigRLSPlugin: a route to an RLS plugin keeps its plugin's
// validated config, by name; a plugin no route uses is dropped.
func TestRouteConfigRLSPlugin(t *testing.T) {
	m := routeConfig(pluginRoute("rls"), prefixRoute("/", "c1"))
	m.ClusterSpecifierPlugins = []*routev3.ClusterSpecifierPlugin{
		rlsPlugin("rls", "pkg.Svc", "dns:///rls.example.com:443", 10),
		rlsPlugin("unused", "a", "rls.example.com", 1),
	}
	_, v, err := decode(t, RouteConfigType, m)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	rc := v.(*routeconfig.Config)
	if r := rc.VirtualHosts[0].Routes[0]; !reflect.DeepEqual(r.Action, routeconfig.Action{Kind: routeconfig.ActionClusterSpecifierPlugin, ClusterSpecifierPlugin: "rls"}) {
		t.Errorf("route action = %+v, want the plugin rls", r.Action)
	}
	got := rc.ClusterSpecifierPlugins
	if len(got) != 1 || got["rls"] == nil || got["rls"].LookupService != "dns:///rls.example.com:443" || got["rls"].CacheSizeBytes != 10 ||
		len(got["rls"].KeyBuilders) != 1 || got["rls"].KeyBuilders[0].Names[0] != (rls.Method{Service: "pkg.Svc"}) {
		t.Errorf("ClusterSpecifierPlugins = %+v, want only rls, as configured", got)
	}
	if routeconfig.ActionClusterSpecifierPlugin.String() != "cluster_specifier_plugin" {
		t.Errorf("String() = %q", routeconfig.ActionClusterSpecifierPlugin.String())
	}
}

// TestRouteConfigRLSErrors: a plugin's error names the plugin, then the
// field inside its config.
func TestRouteConfigRLSErrors(t *testing.T) {
	with := func(p *routev3.ClusterSpecifierPlugin) func() proto.Message {
		return func() proto.Message {
			m := routeConfig(pluginRoute("rls"))
			m.ClusterSpecifierPlugins = []*routev3.ClusterSpecifierPlugin{p}
			return m
		}
	}
	const at = `rds "r1": cluster_specifier_plugins[0] "rls": route_lookup_config.`
	runErrorCases(t, RouteConfigType, "r1", []errorCase{
		{name: "no key builders", build: with(rlsPlugin("rls", "", "rls.example.com", 10)), want: at + `grpc_keybuilders: empty`},
		{name: "no lookup service", build: with(rlsPlugin("rls", "s", "", 10)), want: at + `lookup_service: empty`},
		{name: "no cache size", build: with(rlsPlugin("rls", "s", "rls.example.com", 0)), want: at + `cache_size_bytes: 0, must be positive`},
	})
}
