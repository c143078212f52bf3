package xdsresource

import (
	"fmt"
	"slices"

	udpatypev1 "github.com/cncf/xds/go/udpa/type/v1"
	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Type URLs of the HTTP filters that are understood.
const (
	RouterFilterTypeURL       = TypeURLPrefix + "envoy.extensions.filters.http.router.v3.Router"
	FaultFilterTypeURL        = TypeURLPrefix + "envoy.extensions.filters.http.fault.v3.HTTPFault"
	RBACFilterTypeURL         = TypeURLPrefix + "envoy.extensions.filters.http.rbac.v3.RBAC"
	RBACPerRouteFilterTypeURL = TypeURLPrefix + "envoy.extensions.filters.http.rbac.v3.RBACPerRoute"
)

// httpFilters maps the type URL of each understood HTTP filter config to a
// constructor of its message. filterOverrides does the same for the configs
// allowed in typed_per_filter_config; the router takes no override.
// clientFilters and serverFilters say on which side gRPC runs each filter:
// the fault filter only on clients, RBAC only on servers, the router on
// both.
var (
	httpFilters = map[string]func() proto.Message{
		RouterFilterTypeURL: func() proto.Message { return new(routerv3.Router) },
		FaultFilterTypeURL:  func() proto.Message { return new(faultv3.HTTPFault) },
		RBACFilterTypeURL:   func() proto.Message { return new(rbacv3.RBAC) },
	}
	filterOverrides = map[string]func() proto.Message{
		FaultFilterTypeURL:        func() proto.Message { return new(faultv3.HTTPFault) },
		RBACPerRouteFilterTypeURL: func() proto.Message { return new(rbacv3.RBACPerRoute) },
	}
	clientFilters = map[string]bool{RouterFilterTypeURL: true, FaultFilterTypeURL: true}
	serverFilters = map[string]bool{RouterFilterTypeURL: true, RBACFilterTypeURL: true}
)

const (
	xdsTypedStructURL  = TypeURLPrefix + "xds.type.v3.TypedStruct"
	udpaTypedStructURL = TypeURLPrefix + "udpa.type.v1.TypedStruct"
	filterConfigURL    = TypeURLPrefix + "envoy.config.route.v3.FilterConfig"
)

// checkFilterConfig returns the type URL of a filter config and checks it
// against known, the filters that are understood. A config wrapped in a
// TypedStruct is identified by the type URL inside it and its fields are
// not read: msg is then nil. Otherwise msg is the unmarshalled config, to
// be checked further by validateFilterConfig. ok is false when the type
// is not understood.
func checkFilterConfig(cfg *anypb.Any, known map[string]func() proto.Message) (typeURL string, msg proto.Message, ok bool, err error) {
	switch cfg.GetTypeUrl() {
	case xdsTypedStructURL:
		ts := new(xdstypev3.TypedStruct)
		if err := unmarshal(cfg.GetValue(), ts); err != nil {
			return "", nil, false, err
		}
		_, ok := known[ts.GetTypeUrl()]
		return ts.GetTypeUrl(), nil, ok, nil
	case udpaTypedStructURL:
		ts := new(udpatypev1.TypedStruct)
		if err := unmarshal(cfg.GetValue(), ts); err != nil {
			return "", nil, false, err
		}
		_, ok := known[ts.GetTypeUrl()]
		return ts.GetTypeUrl(), nil, ok, nil
	}
	newMsg, ok := known[cfg.GetTypeUrl()]
	if !ok {
		return cfg.GetTypeUrl(), nil, false, nil
	}
	msg = newMsg()
	if err := unmarshal(cfg.GetValue(), msg); err != nil {
		return "", nil, false, err
	}
	return cfg.GetTypeUrl(), msg, true, nil
}

// checkFilterOverrides validates a typed_per_filter_config map: every entry
// must be a config override of an understood filter, unless it is wrapped
// in a FilterConfig marked is_optional. As in gRPC C-core, a FilterConfig
// needs its config, whatever is_optional says, and its disabled field is
// not read: a disabled override is checked as any other (grpc-go, with its
// experimental filters off, also ignores disabled, but takes a FilterConfig
// without config when it is optional).
func checkFilterOverrides(m map[string]*anypb.Any) error {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		cfg, optional := m[name], false
		if cfg.GetTypeUrl() == filterConfigURL {
			fc := new(routev3.FilterConfig)
			if err := unmarshal(cfg.GetValue(), fc); err != nil {
				return fmt.Errorf("typed_per_filter_config[%q]: %v", name, err)
			}
			if fc.GetConfig() == nil {
				return fmt.Errorf("typed_per_filter_config[%q].config: missing", name)
			}
			cfg, optional = fc.GetConfig(), fc.GetIsOptional()
		}
		url, msg, ok, err := checkFilterConfig(cfg, filterOverrides)
		switch {
		case err != nil:
			return fmt.Errorf("typed_per_filter_config[%q]: %v", name, err)
		case !ok && !optional:
			return fmt.Errorf("typed_per_filter_config[%q]: unsupported filter override type %q", name, url)
		case ok:
			if err := validateFilterConfig(url, msg); err != nil {
				return fmt.Errorf("typed_per_filter_config[%q]: %v", name, err)
			}
		}
	}
	return nil
}

// validateFilterConfig checks a filter config, or a config override, of a
// type that is understood. msg is the unmarshalled config, nil when it came
// in a TypedStruct: gRPC reads the filters it knows only from their own
// message, so such a config is rejected, whatever is_optional says. Errors
// start with the field path inside the config.
func validateFilterConfig(typeURL string, msg proto.Message) error {
	if msg == nil {
		return fmt.Errorf("a config of type %q in a TypedStruct is not supported", typeURL)
	}
	switch m := msg.(type) {
	case *rbacv3.RBAC:
		return validateRBAC(m, "")
	case *rbacv3.RBACPerRoute:
		if m.GetRbac() == nil {
			return nil // the route runs without RBAC
		}
		return validateRBAC(m.GetRbac(), "rbac.")
	}
	return nil
}
