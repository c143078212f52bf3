package xdsresource

import (
	"math"
	"testing"
	"time"

	udpatypev1 "github.com/cncf/xds/go/udpa/type/v1"
	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	gcpauthnv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/gcp_authn/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
)

// withMetadata returns an EDS cluster with typed_filter_metadata "k" set to
// a and filter_metadata "f" to s, each when not nil.
func withMetadata(a *anypb.Any, s *structpb.Struct) func() proto.Message {
	return func() proto.Message {
		m := edsCluster()
		m.Metadata = &corev3.Metadata{}
		if a != nil {
			m.Metadata.TypedFilterMetadata = map[string]*anypb.Any{"k": a}
		}
		if s != nil {
			m.Metadata.FilterMetadata = map[string]*structpb.Struct{"f": s}
		}
		return m
	}
}

// withUpstream returns an EDS cluster whose upstream_config holds cfg.
func withUpstream(cfg *anypb.Any) func() proto.Message {
	return func() proto.Message {
		m := edsCluster()
		m.UpstreamConfig = &corev3.TypedExtensionConfig{Name: "u", TypedConfig: cfg}
		return m
	}
}

// nan is a Struct whose field "a" holds a list with NaN, which JSON
// cannot write.
func nan() *structpb.Struct {
	return &structpb.Struct{Fields: map[string]*structpb.Value{"a": structpb.NewListValue(&structpb.ListValue{
		Values: []*structpb.Value{structpb.NewStringValue("x"), structpb.NewNumberValue(math.NaN())},
	})}}
}

// As in gRPC C-core, a Cluster's metadata and upstream_config are read
// whatever uses them, and one gRPC C-core cannot read is rejected.
func TestClusterMetadataAndUpstreamConfigErrors(t *testing.T) {
	with := func(url string, m proto.Message) *anypb.Any {
		a := toAny(t, m)
		if url != "" {
			a.TypeUrl = url
		}
		return a
	}
	const md = `cds "c1": metadata.typed_filter_metadata["k"]`
	runErrorCases(t, ClusterType, "c1", []errorCase{
		{name: "typed metadata without type_url", build: withMetadata(&anypb.Any{}, nil), want: md + `.type_url: not set`},
		{name: "typed metadata naming no type", build: withMetadata(with("Audience", &gcpauthnv3.Audience{Url: "u"}), nil),
			want: md + `.type_url: "Audience" names no type (want PREFIX/TYPE)`},
		{name: "audience without url", build: withMetadata(with("", &gcpauthnv3.Audience{}), nil), want: md + `.url: empty`},
		{name: "audience under another prefix, without url", build: withMetadata(with("example.com/envoy.extensions.filters.http.gcp_authn.v3.Audience", &gcpauthnv3.Audience{}), nil),
			want: md + `.url: empty`},
		{name: "audience in a TypedStruct", build: withMetadata(with("", &xdstypev3.TypedStruct{TypeUrl: "type.googleapis.com/envoy.extensions.filters.http.gcp_authn.v3.Audience"}), nil),
			want: md + `: envoy.extensions.filters.http.gcp_authn.v3.Audience in a TypedStruct cannot be read`},
		{name: "TypedStruct naming no type", build: withMetadata(with("", &udpatypev1.TypedStruct{}), nil),
			want: md + `: TypedStruct type_url: not set`},
		{name: "TypedStruct with NaN", build: withMetadata(with("", &xdstypev3.TypedStruct{TypeUrl: "x/y", Value: nan()}), nil),
			want: md + `: TypedStruct value["a"][1]: number NaN has no JSON form`},
		{name: "filter_metadata with infinity", build: withMetadata(nil, &structpb.Struct{Fields: map[string]*structpb.Value{
			"b": structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"c": structpb.NewNumberValue(math.Inf(-1))}}),
		}}), want: `cds "c1": metadata.filter_metadata["f"]["b"]["c"]: number -Inf has no JSON form`},
		{name: "upstream_config without typed_config", build: withUpstream(nil), want: `cds "c1": upstream_config.typed_config: not set`},
		{name: "upstream_config of another type", build: withUpstream(with("", &clusterv3.Cluster{})),
			want: `cds "c1": upstream_config.typed_config: type "type.googleapis.com/envoy.config.cluster.v3.Cluster" is not supported, want envoy.extensions.upstreams.http.v3.HttpProtocolOptions`},
		{name: "upstream_config naming no type", build: withUpstream(with("/", &httpv3.HttpProtocolOptions{})),
			want: `cds "c1": upstream_config.typed_config.type_url: "/" names no type (want PREFIX/TYPE)`},
		{name: "negative idle_timeout", build: withUpstream(with("", &httpv3.HttpProtocolOptions{
			CommonHttpProtocolOptions: &corev3.HttpProtocolOptions{IdleTimeout: &durationpb.Duration{Seconds: -1}},
		})), want: `cds "c1": upstream_config.typed_config.common_http_protocol_options.idle_timeout: `, prefix: true},
	})
}

// Metadata of types gRPC does not read, and an upstream_config gRPC can
// read, are accepted, under any type URL prefix.
func TestClusterMetadataAndUpstreamConfigAccepted(t *testing.T) {
	for name, build := range map[string]func() proto.Message{
		"audience":    withMetadata(toAny(t, &gcpauthnv3.Audience{Url: "https://example.com"}), mustStruct(t, map[string]any{"n": 1.5, "l": []any{"x", true}})),
		"other type":  withMetadata(&anypb.Any{TypeUrl: "example.com/some.Type", Value: []byte{0xff}}, nil),
		"TypedStruct": withMetadata(toAny(t, &xdstypev3.TypedStruct{TypeUrl: "x/y", Value: mustStruct(t, map[string]any{"n": 2.0})}), nil),
		"idle_timeout": withUpstream(func() *anypb.Any {
			a := toAny(t, &httpv3.HttpProtocolOptions{CommonHttpProtocolOptions: &corev3.HttpProtocolOptions{IdleTimeout: durationpb.New(time.Minute)}})
			a.TypeUrl = "example.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
			return a
		}()),
	} {
		if _, _, err := decode(t, ClusterType, build()); err != nil {
			t.Errorf("%s: Decode: %v", name, err)
		}
	}
}
