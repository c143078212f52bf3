package rls

import (
	"reflect"
	"strings"
	"testing"
	"time"

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

// specifier returns the RouteLookupClusterSpecifier whose
// route_lookup_config is the JSON form cfg.
func specifier(t testing.TB, cfg string) *anypb.Any {
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
	return &anypb.Any{TypeUrl: ClusterSpecifierTypeURL, Value: b}
}

func TestValidate(t *testing.T) {
	got, err := Validate(specifier(t, rlsJSON))
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		KeyBuilders: []KeyBuilder{
			{
				Names:        []Method{{"pkg.Svc", "Get"}, {"pkg.Svc", "Put"}},
				Headers:      []HeaderKey{{Key: "user", Names: []string{"x-user", "x-uid"}}},
				HostKey:      "h",
				ServiceKey:   "s",
				MethodKey:    "m",
				ConstantKeys: map[string]string{"zone": "z1"},
			},
			{Names: []Method{{Service: "pkg.Other"}}},
		},
		LookupService:        "dns:///rls.example.com:443",
		LookupServiceTimeout: DefaultLookupServiceTimeout,
		MaxAge:               MaxAge, // 600s is capped, stale_age being unset
		StaleAge:             MaxAge,
		CacheSizeBytes:       MaxCacheSizeBytes,
		DefaultTarget:        "fallback",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Validate = %+v, want %+v", got, want)
	}
}

func TestValidateAges(t *testing.T) {
	tests := []struct {
		name, ages             string
		timeout, maxAge, stale time.Duration
	}{
		{"max age only", `"max_age": "60s"`, DefaultLookupServiceTimeout, time.Minute, time.Minute},
		{"stale above max", `"max_age": "60s", "stale_age": "120s", "lookup_service_timeout": "2s"`, 2 * time.Second, time.Minute, time.Minute},
		{"both long", `"max_age": "3600s", "stale_age": "1200s"`, DefaultLookupServiceTimeout, time.Hour, MaxAge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rl, err := Validate(specifier(t, `{"grpc_keybuilders": [{"names": [{"service": "a"}]}], "lookup_service": "rls.example.com", "cache_size_bytes": "10", `+tt.ages+`}`))
			if err != nil {
				t.Fatal(err)
			}
			if rl.LookupServiceTimeout != tt.timeout || rl.MaxAge != tt.maxAge || rl.StaleAge != tt.stale || rl.CacheSizeBytes != 10 {
				t.Errorf("config = %+v, want timeout %v, max_age %v, stale_age %v", rl, tt.timeout, tt.maxAge, tt.stale)
			}
		})
	}
}

func TestValidateErrors(t *testing.T) {
	with := func(cfg string) func() *anypb.Any { return func() *anypb.Any { return specifier(t, cfg) } }
	const tail = `"lookup_service": "rls.example.com", "cache_size_bytes": "10"`
	kb := func(builders string) func() *anypb.Any {
		return with(`{"grpc_keybuilders": [` + builders + `], ` + tail + `}`)
	}
	const at = `route_lookup_config.`
	for _, tc := range []struct {
		name   string
		build  func() *anypb.Any
		want   string
		prefix bool
	}{
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
		{name: "not a RouteLookupClusterSpecifier", build: func() *anypb.Any {
			return &anypb.Any{TypeUrl: ClusterSpecifierTypeURL, Value: []byte{0xff}}
		}, want: `cannot unmarshal grpc.lookup.v1.RouteLookupClusterSpecifier: `, prefix: true},
	} {
		_, err := Validate(tc.build())
		if err == nil || err.Error() != tc.want && !(tc.prefix && strings.HasPrefix(err.Error(), tc.want)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// protoValueOf wraps a message as a field value.
func protoValueOf(m *dynamicpb.Message) protoreflect.Value { return protoreflect.ValueOfMessage(m) }
