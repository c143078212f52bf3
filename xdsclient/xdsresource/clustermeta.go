package xdsresource

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	gcpauthnv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/gcp_authn/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/xdsduration"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/internal/decoding"
)

// The message type of the one typed_filter_metadata that
// checkClusterMetadata reads.
var (
	audienceType = messageType(new(gcpauthnv3.Audience))
)

func messageType(m proto.Message) string { return string(m.ProtoReflect().Descriptor().FullName()) }

// checkClusterMetadata validates a Cluster's metadata as gRPC C-core reads
// it (ParseXdsMetadataMap) for every Cluster, whatever uses it: each
// typed_filter_metadata value names a type (decoding.ExtensionType), a
// TypedStruct there is readable and names a type too, an Audience (gRFC
// A83) has a url, and every Struct, in filter_metadata or a TypedStruct,
// can be written as JSON. Other types are not read. Errors name the field
// below the Cluster.
func checkClusterMetadata(md *corev3.Metadata) error {
	if md == nil {
		return nil // the common case, which allocates nothing
	}
	typed := md.GetTypedFilterMetadata()
	for _, key := range slices.Sorted(maps.Keys(typed)) {
		if err := checkTypedMetadata(typed[key].GetTypeUrl(), typed[key].GetValue()); err != nil {
			return fmt.Errorf("metadata.typed_filter_metadata[%q]%v", key, err)
		}
	}
	untyped := md.GetFilterMetadata()
	for _, key := range slices.Sorted(maps.Keys(untyped)) {
		if err := decoding.CheckJSON(untyped[key]); err != nil {
			return fmt.Errorf("metadata.filter_metadata[%q]%v", key, err)
		}
	}
	return nil
}

// checkTypedMetadata checks one typed_filter_metadata value, of type URL
// url. Errors start with the field below the value, or with ": ".
func checkTypedMetadata(url string, value []byte) error {
	typ, err := decoding.ExtensionType(url)
	if err != nil {
		return fmt.Errorf(".%v", err)
	}
	switch typ {
	case decoding.XDSTypedStruct, decoding.UDPATypedStruct:
		inner, s, err := decoding.ReadTypedStruct(typ, value)
		if err != nil {
			return fmt.Errorf(": %v", err)
		}
		innerType, err := decoding.ExtensionType(inner)
		if err != nil {
			return fmt.Errorf(": TypedStruct %v", err)
		}
		if err := decoding.CheckJSON(s); err != nil {
			return fmt.Errorf(": TypedStruct value%v", err)
		}
		if innerType == audienceType {
			return fmt.Errorf(": %s in a TypedStruct cannot be read", audienceType)
		}
	case audienceType:
		a := new(gcpauthnv3.Audience)
		if err := decoding.Unmarshal(value, a); err != nil {
			return fmt.Errorf(": %v", err)
		}
		if a.GetUrl() == "" {
			return errors.New(".url: empty")
		}
	}
	return nil
}

// checkUpstreamConfig validates a Cluster's upstream_config as gRPC C-core
// does (ParseUpstreamConfig): its typed_config must be an
// HttpProtocolOptions, whose common_http_protocol_options.idle_timeout,
// when set, is a valid duration. gRPC C-core closes connections idle for
// that long; xdslens reads the value and does not apply it. Errors name
// the field below the Cluster.
func checkUpstreamConfig(uc *corev3.TypedExtensionConfig) error {
	if uc == nil {
		return nil
	}
	o := new(httpv3.HttpProtocolOptions)
	if err := decoding.UnmarshalExtension(uc.GetTypedConfig(), o); err != nil {
		return fmt.Errorf("upstream_config.%v", err)
	}
	if d := o.GetCommonHttpProtocolOptions().GetIdleTimeout(); d != nil {
		if _, err := xdsduration.Parse(d); err != nil {
			return fmt.Errorf("upstream_config.typed_config.common_http_protocol_options.idle_timeout: %v", err)
		}
	}
	return nil
}
