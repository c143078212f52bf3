// Package filterconfig validates the HTTP filters of xDS resources (gRFC
// A39): the http_filters of an HttpConnectionManager, on a client's
// Listener or a server's filter chain, and the overrides of
// typed_per_filter_config on virtual hosts, routes and weighted clusters.
// The router and the fault filter are checked here; every other filter
// is one registered with package httpfilter, whose parser decides. Its
// rules are rows of the table in package xdsresource.
package filterconfig

import (
	"errors"
	"fmt"
	"slices"

	udpatypev1 "github.com/cncf/xds/go/udpa/type/v1"
	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/httpfilter"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/internal/decoding"
)

// Type URLs of the HTTP filters that are understood.
const (
	RouterTypeURL       = httpfilter.RouterTypeURL
	FaultTypeURL        = decoding.TypeURLPrefix + "envoy.extensions.filters.http.fault.v3.HTTPFault"
	RBACTypeURL         = httpfilter.RBACTypeURL
	RBACPerRouteTypeURL = httpfilter.RBACPerRouteTypeURL
)

// httpFilters maps the type URL of each HTTP filter config that this
// package validates itself to a constructor of its message.
// filterOverrides does the same for the configs allowed in
// typed_per_filter_config; the router takes no override. clientFilters and
// serverFilters say on which side gRPC runs each of them: the fault filter
// only on clients, the router on both. Every other filter, RBAC among
// them, is one registered with package httpfilter, which parses its
// configs.
var (
	httpFilters = map[string]func() proto.Message{
		RouterTypeURL: func() proto.Message { return new(routerv3.Router) },
		FaultTypeURL:  func() proto.Message { return new(faultv3.HTTPFault) },
	}
	filterOverrides = map[string]func() proto.Message{
		FaultTypeURL: func() proto.Message { return new(faultv3.HTTPFault) },
	}
	clientFilters = map[string]bool{RouterTypeURL: true, FaultTypeURL: true}
	serverFilters = map[string]bool{RouterTypeURL: true}
	// ownMessageOnly are the filter types gRPC reads only from their own
	// message: a config of one of them in a TypedStruct is rejected.
	ownMessageOnly = map[string]bool{
		RouterTypeURL: true, FaultTypeURL: true,
		RBACTypeURL: true, RBACPerRouteTypeURL: true,
	}
)

const (
	filterConfigURL = decoding.TypeURLPrefix + "envoy.config.route.v3.FilterConfig"
)

// filterType is the type of a filter config, as checkFilterConfig found
// it: one that this package validates itself, msg, or one registered with
// package httpfilter, registered.
type filterType struct {
	// url is the config's type URL, for a config in a TypedStruct the one
	// inside.
	url string
	// msg is the unmarshalled config of a type this package validates,
	// nil when it came in a TypedStruct (validateFilterConfig rejects it)
	// or when registered is set.
	msg proto.Message
	// registered is the filter registered for url, which parses the
	// config; nil for the types this package validates.
	registered httpfilter.Filter
	// inStruct is set when the config came in a TypedStruct.
	inStruct bool
	// config is the config, its type URL canonical
	// (decoding.CanonicalTypeURL): the config as received when it was.
	config *anypb.Any
}

// checkFilterConfig returns the type of a filter config, looked for among
// known, the types this package validates, then among the filters
// registered with package httpfilter. A config wrapped in a TypedStruct is
// identified by the type URL inside it; the fields of a known type are
// then not read. ok is false when the type is not understood. As in gRPC
// C-core, a type URL, outside a TypedStruct or in one, names the type
// that follows its last "/" (decoding.CanonicalTypeURL), and one that
// names none is an error, whatever is_optional says.
func checkFilterConfig(cfg *anypb.Any, known map[string]func() proto.Message) (ft filterType, ok bool, err error) {
	url, err := decoding.CanonicalTypeURL(cfg.GetTypeUrl())
	if err != nil {
		return ft, false, err
	}
	if url != cfg.GetTypeUrl() {
		cfg = &anypb.Any{TypeUrl: url, Value: cfg.GetValue()}
	}
	switch url {
	case decoding.XDSTypedStructURL:
		ts := new(xdstypev3.TypedStruct)
		if err := decoding.Unmarshal(cfg.GetValue(), ts); err != nil {
			return ft, false, err
		}
		return typeInStruct(ts.GetTypeUrl(), cfg, known)
	case decoding.UDPATypedStructURL:
		ts := new(udpatypev1.TypedStruct)
		if err := decoding.Unmarshal(cfg.GetValue(), ts); err != nil {
			return ft, false, err
		}
		return typeInStruct(ts.GetTypeUrl(), cfg, known)
	}
	ft.url, ft.config = url, cfg
	newMsg, ok := known[ft.url]
	if !ok {
		ft.registered = registeredFilter(ft.url)
		return ft, ft.registered != nil, nil
	}
	ft.msg = newMsg()
	if err := decoding.Unmarshal(cfg.GetValue(), ft.msg); err != nil {
		return ft, false, err
	}
	return ft, true, nil
}

// typeInStruct is checkFilterConfig for cfg, a TypedStruct naming url.
func typeInStruct(url string, cfg *anypb.Any, known map[string]func() proto.Message) (filterType, bool, error) {
	url, err := decoding.CanonicalTypeURL(url)
	if err != nil {
		return filterType{}, false, fmt.Errorf("TypedStruct: %v", err)
	}
	ft := filterType{url: url, inStruct: true, config: cfg}
	if _, ok := known[url]; ok {
		return ft, true, nil
	}
	ft.registered = registeredFilter(url)
	return ft, ft.registered != nil, nil
}

// registeredFilter returns the filter registered with package httpfilter
// for url, unless url is one of the types this package validates itself
// (router and fault), whose own filters may be registered too: nil then,
// and when none is registered.
func registeredFilter(url string) httpfilter.Filter {
	if _, ok := httpFilters[url]; ok {
		return nil
	}
	if _, ok := filterOverrides[url]; ok {
		return nil
	}
	return httpfilter.Get(url)
}

// runsOn reports whether gRPC runs the filter of type ft on servers
// (server true) or on clients: the built-in types as clientFilters and
// serverFilters say, a registered filter on servers when it is an
// httpfilter.ServerFilter and on clients when it is an
// httpfilter.ClientFilter.
func (ft filterType) runsOn(server bool) bool {
	if ft.registered == nil {
		if server {
			return serverFilters[ft.url]
		}
		return clientFilters[ft.url]
	}
	if server {
		_, ok := ft.registered.(httpfilter.ServerFilter)
		return ok
	}
	_, ok := ft.registered.(httpfilter.ClientFilter)
	return ok
}

// Override is one entry of a typed_per_filter_config map (gRFC
// A39), a FilterConfig wrapper resolved: the config that replaces, for
// the virtual host, route or weighted cluster that carries it, the config
// of the HTTP filter of the same instance name.
type Override struct {
	// TypeURL is the type of Config, for a config in a TypedStruct the
	// one inside it, after TypeURLPrefix whatever prefix it came with.
	TypeURL string
	// Config is the override as received, taken out of its FilterConfig,
	// its type URL made canonical as TypeURL is.
	// A FilterConfig's disabled is not read, as gRPC C-core does not read
	// it: Config applies, on channels and on xDS-enabled servers alike.
	Config *anypb.Any
}

// Overrides maps HTTP filter instance names to their override in
// one scope. Optional overrides of a type that is not understood are left
// out.
type Overrides map[string]Override

// ValidateOverrides validates a typed_per_filter_config map and returns
// the overrides, nil when there are none: every entry must have a name and
// be a config override of an understood filter, unless it is wrapped in a
// FilterConfig marked is_optional; the router, which takes no override,
// is rejected even then, as in gRPC C-core (ParseTypedPerFilterConfig). As in gRPC C-core, a FilterConfig needs
// its config, whatever is_optional says (grpc-go, with its experimental
// filters off, takes a FilterConfig without config when it is optional),
// and its disabled field is not read: a disabled override is validated and
// applies as any other.
func ValidateOverrides(m map[string]*anypb.Any) (Overrides, error) {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	var out Overrides
	add := func(name string, o Override) {
		if out == nil {
			out = make(Overrides, len(m))
		}
		out[name] = o
	}
	for _, name := range names {
		if name == "" {
			return nil, errors.New(`typed_per_filter_config[""]: the filter instance name is empty`)
		}
		cfg, optional := m[name], false
		url, err := decoding.CanonicalTypeURL(cfg.GetTypeUrl())
		if err != nil {
			return nil, fmt.Errorf("typed_per_filter_config[%q]: %v", name, err)
		}
		if url == filterConfigURL {
			fc := new(routev3.FilterConfig)
			if err := decoding.Unmarshal(cfg.GetValue(), fc); err != nil {
				return nil, fmt.Errorf("typed_per_filter_config[%q]: %v", name, err)
			}
			if fc.GetConfig() == nil {
				return nil, fmt.Errorf("typed_per_filter_config[%q].config: missing", name)
			}
			cfg, optional = fc.GetConfig(), fc.GetIsOptional()
		}
		ft, ok, err := checkFilterConfig(cfg, filterOverrides)
		switch {
		case err != nil:
			return nil, fmt.Errorf("typed_per_filter_config[%q]: %v", name, err)
		case ft.url == RouterTypeURL:
			// gRPC knows the router, which takes no override: as in
			// gRPC C-core, that is an error, optional or not.
			return nil, fmt.Errorf("typed_per_filter_config[%q]: the router filter takes no config override", name)
		case !ok && !optional:
			return nil, fmt.Errorf("typed_per_filter_config[%q]: unsupported filter override type %q", name, ft.url)
		case ok:
			if err := validateFilterConfig(ft, true); err != nil {
				return nil, fmt.Errorf("typed_per_filter_config[%q]: %v", name, err)
			}
			add(name, Override{TypeURL: ft.url, Config: ft.config})
		}
	}
	return out, nil
}

// validateFilterConfig checks a filter config (override false), or a
// config override, of a type that is understood, ft. A registered
// filter parses it (RBAC's is package httpfilter's). gRPC reads the
// filters it has built in only from their own message, so a config of one
// of them in a TypedStruct is rejected, whatever is_optional says. Errors
// start with the field path inside the config.
func validateFilterConfig(ft filterType, override bool) error {
	cfg := ft.config
	if ft.msg == nil && (ft.registered == nil || ft.inStruct && ownMessageOnly[ft.url]) {
		return fmt.Errorf("a config of type %q in a TypedStruct is not supported", ft.url)
	}
	f := ft.registered
	if f == nil && ft.msg != nil {
		// A built-in type (router, fault) whose filter, the one channels
		// run, reads fields of its own: the values it refuses are
		// refused here, as gRPC C-core refuses them while it parses.
		f = httpfilter.Get(ft.url)
	}
	if f != nil {
		var err error
		if override {
			_, err = f.ParseOverride(cfg)
		} else {
			_, err = f.ParseConfig(cfg)
		}
		return err
	}
	return nil
}

// Filter is one entry of a Listener's http_filters.
type Filter struct {
	// Name is the filter's instance name, unique within the Listener.
	Name string
	// TypeURL is the type of the filter's config, such as
	// RouterTypeURL, after TypeURLPrefix whatever prefix it came with.
	// For a config wrapped in a TypedStruct it is the type URL inside the
	// TypedStruct.
	TypeURL string
	// Config is typed_config as received, its type URL made canonical as
	// TypeURL is.
	Config *anypb.Any
}

// ValidateFilters checks the filter chain of a client's or a server's
// HttpConnectionManager and returns the filters that are understood. The
// router must come last and only last. A filter that gRPC runs only on the
// other side is rejected, or left out when it is optional; the fields of
// its config are checked only when it is kept.
func ValidateFilters(filters []*hcmv3.HttpFilter, server bool) ([]Filter, error) {
	sideName := "clients"
	if server {
		sideName = "servers"
	}
	var out []Filter
	var index []int // index[i] is the position in filters of out[i]
	seen := make(map[string]bool, len(filters))
	for i, f := range filters {
		name := f.GetName()
		if name == "" {
			return nil, fmt.Errorf("http_filters[%d]: name is empty", i)
		}
		if seen[name] {
			return nil, fmt.Errorf("http_filters[%d]: duplicate name %q", i, name)
		}
		seen[name] = true
		cfg := f.GetTypedConfig()
		if cfg == nil {
			// Optional or not, as in gRPC C-core: is_optional excuses a
			// type gRPC does not know, not a filter without one.
			return nil, fmt.Errorf("http_filters[%d] %q: typed_config missing", i, name)
		}
		ft, ok, err := checkFilterConfig(cfg, httpFilters)
		if err != nil {
			return nil, fmt.Errorf("http_filters[%d] %q: %v", i, name, err)
		}
		if !ok {
			if f.GetIsOptional() {
				continue
			}
			return nil, fmt.Errorf("http_filters[%d] %q: unsupported filter type %q", i, name, ft.url)
		}
		if !ft.runsOn(server) {
			if f.GetIsOptional() {
				continue
			}
			return nil, fmt.Errorf("http_filters[%d] %q: filter type %q is not supported on %s", i, name, ft.url, sideName)
		}
		if err := validateFilterConfig(ft, false); err != nil {
			return nil, fmt.Errorf("http_filters[%d] %q: %v", i, name, err)
		}
		out = append(out, Filter{Name: name, TypeURL: ft.url, Config: ft.config})
		index = append(index, i)
	}
	if len(out) == 0 {
		return nil, errors.New("http_filters is empty: the router filter is required")
	}
	last := len(out) - 1
	for i, f := range out[:last] {
		if f.TypeURL == RouterTypeURL {
			return nil, fmt.Errorf("http_filters[%d] %q: the router must be the last filter", index[i], f.Name)
		}
	}
	if out[last].TypeURL != RouterTypeURL {
		return nil, fmt.Errorf("http_filters: last filter %q is not the router", out[last].Name)
	}
	return out, nil
}
