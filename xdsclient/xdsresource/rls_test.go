package xdsresource

import (
	"reflect"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/anypb"
)

// rlsJSON is a valid route_lookup_config in the JSON form of the proto.
const rlsJSON = `{
	"grpc_keybuilders": [
		{"names": [{"service": "pkg.Svc", "method": "Get"}, {"service": "pkg.Svc", "method": "Put"}],
		 "headers": [{"key": "user", "names": ["x-user", "x-uid"]}],
		 "extra_keys": {"host": "h", "service": "s", "method": "m"},
		 "constant_keys": {"zone": "z1"}},
		{"names": [{"service": "pkg.Other"}]}
	],
	"lookup_service": "dns:///rls.example.com:443",
	"max_age": "600s",
	"cache_size_bytes": "1099511627776",
	"default_target": "fallback"
}`

// rlsPlugin returns the RouteLookupClusterSpecifier whose config is the JSON
// form cfg, as a plugin named name.
func rlsPlugin(t testing.TB, name, cfg string) *routev3.ClusterSpecifierPlugin {
	t.Helper()
	m := dynamicpb.NewMessage(lookupMessage("RouteLookupConfig"))
	if err := protojson.Unmarshal([]byte(cfg), m); err != nil {
		t.Fatalf("route lookup config %s: %v", cfg, err)
	}
	spec := dynamicpb.NewMessage(lookupMessage("RouteLookupClusterSpecifier"))
	spec.Set(spec.Descriptor().Fields().ByName("route_lookup_config"), protoValueOf(m))
	b, err := proto.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	return &routev3.ClusterSpecifierPlugin{Extension: &corev3.TypedExtensionConfig{
		Name:        name,
		TypedConfig: &anypb.Any{TypeUrl: RouteLookupClusterSpecifierTypeURL, Value: b},
	}}
}

// pluginRoute is a route with prefix "/p" to the plugin name.
func pluginRoute(name string) *routev3.Route {
	return &routev3.Route{
		Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/p"}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_ClusterSpecifierPlugin{ClusterSpecifierPlugin: name}}},
	}
}

func TestRouteConfigRLSPlugin(t *testing.T) {
	m := routeConfig(pluginRoute("rls"), prefixRoute("/", "c1"))
	unused := rlsPlugin(t, "unused", `{"grpc_keybuilders": [{"names": [{"service": "a"}]}], "lookup_service": "rls.example.com", "cache_size_bytes": "1"}`)
	m.ClusterSpecifierPlugins = []*routev3.ClusterSpecifierPlugin{rlsPlugin(t, "rls", rlsJSON), unused}
	_, v, err := decode(t, RouteConfigType, m)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	rc := v.(*RouteConfiguration)
	if r := rc.VirtualHosts[0].Routes[0]; !reflect.DeepEqual(r.Action, RouteAction{Kind: ActionClusterSpecifierPlugin, ClusterSpecifierPlugin: "rls"}) {
		t.Errorf("route action = %+v, want the plugin rls", r.Action)
	}
	want := &RouteLookupConfig{
		KeyBuilders: []RLSKeyBuilder{
			{
				Names:        []RLSMethod{{"pkg.Svc", "Get"}, {"pkg.Svc", "Put"}},
				Headers:      []RLSHeaderKey{{Key: "user", Names: []string{"x-user", "x-uid"}}},
				HostKey:      "h",
				ServiceKey:   "s",
				MethodKey:    "m",
				ConstantKeys: map[string]string{"zone": "z1"},
			},
			{Names: []RLSMethod{{Service: "pkg.Other"}}},
		},
		LookupService:        "dns:///rls.example.com:443",
		LookupServiceTimeout: RLSDefaultLookupServiceTimeout,
		MaxAge:               RLSMaxAge, // 600s is capped, stale_age being unset
		StaleAge:             RLSMaxAge,
		CacheSizeBytes:       RLSMaxCacheSizeBytes,
		DefaultTarget:        "fallback",
	}
	if got := rc.ClusterSpecifierPlugins; len(got) != 1 || !reflect.DeepEqual(got["rls"], want) {
		t.Errorf("ClusterSpecifierPlugins = %+v, want only rls = %+v", got, want)
	}
	if ActionClusterSpecifierPlugin.String() != "cluster_specifier_plugin" {
		t.Errorf("String() = %q", ActionClusterSpecifierPlugin.String())
	}
}

func TestRouteConfigRLSAges(t *testing.T) {
	tests := []struct {
		name, ages             string
		timeout, maxAge, stale time.Duration
	}{
		{"max age only", `"max_age": "60s"`, RLSDefaultLookupServiceTimeout, time.Minute, time.Minute},
		{"stale above max", `"max_age": "60s", "stale_age": "120s", "lookup_service_timeout": "2s"`, 2 * time.Second, time.Minute, time.Minute},
		{"both long", `"max_age": "3600s", "stale_age": "1200s"`, RLSDefaultLookupServiceTimeout, time.Hour, RLSMaxAge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := routeConfig(pluginRoute("rls"))
			m.ClusterSpecifierPlugins = []*routev3.ClusterSpecifierPlugin{rlsPlugin(t, "rls",
				`{"grpc_keybuilders": [{"names": [{"service": "a"}]}], "lookup_service": "rls.example.com", "cache_size_bytes": "10", `+tt.ages+`}`)}
			_, v, err := decode(t, RouteConfigType, m)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			rl := v.(*RouteConfiguration).ClusterSpecifierPlugins["rls"]
			if rl.LookupServiceTimeout != tt.timeout || rl.MaxAge != tt.maxAge || rl.StaleAge != tt.stale || rl.CacheSizeBytes != 10 {
				t.Errorf("config = %+v, want timeout %v, max_age %v, stale_age %v", rl, tt.timeout, tt.maxAge, tt.stale)
			}
		})
	}
}

func TestRouteConfigRLSErrors(t *testing.T) {
	with := func(cfg string) func() proto.Message {
		return func() proto.Message {
			m := routeConfig(pluginRoute("rls"))
			m.ClusterSpecifierPlugins = []*routev3.ClusterSpecifierPlugin{rlsPlugin(t, "rls", cfg)}
			return m
		}
	}
	const tail = `"lookup_service": "rls.example.com", "cache_size_bytes": "10"`
	kb := func(builders string) func() proto.Message {
		return with(`{"grpc_keybuilders": [` + builders + `], ` + tail + `}`)
	}
	const at = `rds "r1": cluster_specifier_plugins[0] "rls": route_lookup_config.`
	runErrorCases(t, RouteConfigType, "r1", []errorCase{
		{name: "no key builders", build: with(`{` + tail + `}`), want: at + `grpc_keybuilders: empty`},
		{name: "no names", build: kb(`{"constant_keys": {"a": "b"}}`), want: at + `grpc_keybuilders[0].names: empty`},
		{name: "no service", build: kb(`{"names": [{"method": "m"}]}`), want: at + `grpc_keybuilders[0].names[0].service: empty`},
		{name: "slash in method", build: kb(`{"names": [{"service": "s", "method": "a/b"}]}`),
			want: at + `grpc_keybuilders[0].names[0].method: "a/b" contains a slash`},
		{name: "name in two builders", build: kb(`{"names": [{"service": "s"}]}, {"names": [{"service": "t"}, {"service": "s"}]}`),
			want: at + `grpc_keybuilders[1].names[1]: "/s/" is named twice`},
		{name: "required_match", build: kb(`{"names": [{"service": "s"}], "headers": [{"key": "k", "names": ["h"], "required_match": true}]}`),
			want: at + `grpc_keybuilders[0].headers[0].required_match: must not be set`},
		{name: "header key twice", build: kb(`{"names": [{"service": "s"}], "constant_keys": {"k": "v"}, "headers": [{"key": "k", "names": ["h"]}]}`),
			want: at + `grpc_keybuilders[0].headers[0].key: "k" is used twice`},
		{name: "extra key clash", build: kb(`{"names": [{"service": "s"}], "headers": [{"key": "k", "names": ["h"]}], "extra_keys": {"host": "h", "method": "k"}}`),
			want: at + `grpc_keybuilders[0].extra_keys.method: "k" is already a header or constant key`},
		{name: "no lookup service", build: with(`{"grpc_keybuilders": [{"names": [{"service": "s"}]}], "cache_size_bytes": "1"}`),
			want: at + `lookup_service: empty`},
		{name: "unknown resolver", build: with(`{"grpc_keybuilders": [{"names": [{"service": "s"}]}], "lookup_service": "nosuchscheme:///x", "cache_size_bytes": "1"}`),
			want: at + `lookup_service: "nosuchscheme:///x" is not a target that gRPC can resolve`},
		{name: "stale age without max age", build: with(`{"grpc_keybuilders": [{"names": [{"service": "s"}]}], "stale_age": "1s", ` + tail + `}`),
			want: at + `stale_age: set without max_age`},
		{name: "no cache size", build: with(`{"grpc_keybuilders": [{"names": [{"service": "s"}]}], "lookup_service": "rls.example.com"}`),
			want: at + `cache_size_bytes: 0, must be positive`},
		{name: "not a RouteLookupClusterSpecifier", build: func() proto.Message {
			m := routeConfig(pluginRoute("rls"))
			p := rlsPlugin(t, "rls", `{}`)
			p.Extension.TypedConfig.Value = []byte{0xff}
			m.ClusterSpecifierPlugins = []*routev3.ClusterSpecifierPlugin{p}
			return m
		}, want: `rds "r1": cluster_specifier_plugins[0] "rls": cannot unmarshal grpc.lookup.v1.RouteLookupClusterSpecifier: `, prefix: true},
	})
}

// protoValueOf wraps a message as a field value.
func protoValueOf(m *dynamicpb.Message) protoreflect.Value { return protoreflect.ValueOfMessage(m) }
