// Package routeconfig validates route configurations (RDS, or inline in
// a Listener) as gRPC's data planes use them (gRFC A28): virtual hosts and
// their domains, routes with their matchers and actions, weighted
// clusters, hash policies (A42), retry policies (A44), the RLS cluster
// specifier plugin, and the HTTP filter overrides of each scope (A39);
// and the HttpConnectionManager that names a route configuration and the
// HTTP filters, on clients and on servers. Its rules are rows of the
// table in package xdsresource.
package routeconfig

import (
	"errors"
	"fmt"
	"strings"
	"time"

	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/filterconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/internal/decoding"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/rls"
)

// Config is a validated Config.
type Config struct {
	// Name is the Config's name; it may be empty for a
	// configuration carried inline in a Listener.
	Name string
	// VirtualHosts are the virtual hosts in order.
	VirtualHosts []VirtualHost
	// ClusterSpecifierPlugins are the RLS cluster specifier plugins (gRFC
	// A28) that routes use, by name; nil when there are none. Plugins no
	// route uses are left out, as gRPC does.
	ClusterSpecifierPlugins map[string]*rls.Config
}

// VirtualHost is one virtual host of a Config.
type VirtualHost struct {
	// Name is the virtual host's name.
	Name string
	// Domains is never empty. Each entry is an exact host, "*", a suffix
	// pattern "*.example.com" (one that starts with "*") or a prefix
	// pattern "example.*" (one that ends with "*"); any other "*" in a
	// pattern stands for itself.
	Domains []string
	// Routes are the usable routes in order. Routes that gRPC ignores (see
	// Route) are left out.
	Routes []Route
	// RetryPolicy is the virtual host's retry_policy, nil when unset.
	RetryPolicy *RetryPolicy
	// FilterOverrides is the virtual host's typed_per_filter_config, nil
	// when empty.
	FilterOverrides filterconfig.Overrides
}

// PathMatchKind says which path matcher a Route uses.
type PathMatchKind int

// Path matcher kinds.
const (
	// PathPrefix matches paths that start with Route.Prefix; an empty
	// prefix matches every path.
	PathPrefix PathMatchKind = iota + 1
	// PathExact matches the path Route.Path.
	PathExact
	// PathRegex matches paths that Route.SafeRegex matches in full.
	PathRegex
)

// String returns "prefix", "path" or "safe_regex".
func (k PathMatchKind) String() string {
	switch k {
	case PathPrefix:
		return "prefix"
	case PathExact:
		return "path"
	case PathRegex:
		return "safe_regex"
	}
	return fmt.Sprintf("PathMatchKind(%d)", int(k))
}

// Route is one validated route.
//
// Following gRPC C-core, a route whose match has query_parameters, or a
// prefix or path that no gRPC method path ("/service/method") can match,
// or whose route action names no cluster specifier that gRPC understands,
// or points to an optional cluster_specifier_plugin of a type other than
// RLS, is left out of its VirtualHost rather than rejected.
type Route struct {
	// Name is the route's name, "" when it has none; Index is its
	// position in the virtual host's routes as received, routes gRPC
	// ignores included: together they say which route an RPC took.
	Name  string
	Index int
	// PathMatch says which of Prefix, Path and SafeRegex applies.
	PathMatch PathMatchKind
	// Prefix, Path and SafeRegex hold the path matcher; only the one named
	// by PathMatch is meaningful. SafeRegex is an RE2 expression that must
	// match the whole path.
	Prefix, Path, SafeRegex string
	// CaseInsensitive is true when match.case_sensitive is false.
	CaseInsensitive bool
	// Headers must all match for the route to match.
	Headers []matcher.Header
	// FractionPerMillion is runtime_fraction.default_value in parts per
	// million, nil when unset.
	FractionPerMillion *uint32
	// Action says what to do with a matching request.
	Action Action
	// MaxStreamDuration is the route action's
	// max_stream_duration.grpc_timeout_header_max if set, else its
	// max_stream_duration.max_stream_duration; nil when neither is set.
	// Never negative: a Duration with negative seconds or nanos is
	// rejected, and one beyond what a time.Duration holds is the largest
	// time.Duration (package xdsduration).
	MaxStreamDuration *time.Duration
	// HashPolicies are the route action's supported hash policies, in
	// order; header and filter_state "io.grpc.channel_id" policies are
	// kept, others are dropped.
	HashPolicies []HashPolicy
	// RetryPolicy is the route action's retry_policy, nil when unset.
	RetryPolicy *RetryPolicy
	// AutoHostRewrite is the route action's auto_host_rewrite; it is
	// honoured only when the resource came from a trusted server (gRFC A81)
	// and is false otherwise.
	AutoHostRewrite bool
	// FilterOverrides is the route's typed_per_filter_config, nil when
	// empty: for an HTTP filter it has an override for, it wins over the
	// virtual host's.
	FilterOverrides filterconfig.Overrides
}

// Summary returns a one-line description of rc, for example
// `route config r1: 2 virtual hosts, 5 routes`.
func (rc *Config) Summary() string {
	vhosts, routes := rc.Counts()
	return fmt.Sprintf("route config %s: %s, %s", rc.Name,
		decoding.Plural(vhosts, "virtual host", "virtual hosts"), decoding.Plural(routes, "route", "routes"))
}

// Counts returns how many virtual hosts and routes rc has.
func (rc *Config) Counts() (vhosts, routes int) {
	for _, vh := range rc.VirtualHosts {
		routes += len(vh.Routes)
	}
	return len(rc.VirtualHosts), routes
}

// Validate validates m, from RDS or inline in a Listener, from a trusted
// server (gRFC A81) or not.
func Validate(m *routev3.RouteConfiguration, trustedServer bool) (*Config, error) {
	// RLS is the only cluster specifier plugin gRPC supports. Another type
	// makes the resource invalid unless the plugin is optional: then the
	// routes that use it are ignored. plugins maps each name to its config,
	// nil for those ignored.
	// As in gRPC C-core (ClusterSpecifierPluginParse), a plugin needs its
	// extension and typed_config, optional or not, and names are unique.
	plugins := make(map[string]*rls.Config)
	for i, p := range m.GetClusterSpecifierPlugins() {
		ext := p.GetExtension()
		if ext == nil {
			return nil, fmt.Errorf("cluster_specifier_plugins[%d].extension: missing", i)
		}
		if _, dup := plugins[ext.GetName()]; dup {
			return nil, fmt.Errorf("cluster_specifier_plugins[%d].extension.name: duplicate name %q", i, ext.GetName())
		}
		cfg := ext.GetTypedConfig()
		if cfg == nil {
			return nil, fmt.Errorf("cluster_specifier_plugins[%d] %q: extension.typed_config missing", i, ext.GetName())
		}
		url, err := pluginType(cfg)
		if err != nil {
			return nil, fmt.Errorf("cluster_specifier_plugins[%d] %q: extension.typed_config: %v", i, ext.GetName(), err)
		}
		if url != rls.ClusterSpecifierTypeURL {
			if !p.GetIsOptional() {
				return nil, fmt.Errorf("cluster_specifier_plugins[%d] %q: unsupported plugin type %q",
					i, ext.GetName(), url)
			}
			plugins[ext.GetName()] = nil
			continue
		}
		rl, err := rls.Validate(cfg)
		if err != nil {
			return nil, fmt.Errorf("cluster_specifier_plugins[%d] %q: %v", i, ext.GetName(), err)
		}
		plugins[ext.GetName()] = rl
	}

	rc := &Config{Name: m.GetName()}
	for i, vh := range m.GetVirtualHosts() {
		v, err := validateVirtualHost(trustedServer, vh, fmt.Sprintf("virtual_hosts[%d]", i), plugins)
		if err != nil {
			return nil, err
		}
		rc.VirtualHosts = append(rc.VirtualHosts, v)
		for _, r := range v.Routes {
			if r.Action.Kind == ActionClusterSpecifierPlugin {
				if rc.ClusterSpecifierPlugins == nil {
					rc.ClusterSpecifierPlugins = make(map[string]*rls.Config)
				}
				rc.ClusterSpecifierPlugins[r.Action.ClusterSpecifierPlugin] = plugins[r.Action.ClusterSpecifierPlugin]
			}
		}
	}
	return rc, nil
}

// pluginType returns the type of a cluster specifier plugin's config, as
// gRPC C-core's ExtractXdsExtension finds it: the type its type URL names
// (decoding.CanonicalTypeURL), or for a TypedStruct the one it holds. An
// RLS config in a TypedStruct is an error: gRPC reads it only from its
// own message.
func pluginType(cfg *anypb.Any) (string, error) {
	url, err := decoding.CanonicalTypeURL(cfg.GetTypeUrl())
	if err != nil || url != decoding.XDSTypedStructURL && url != decoding.UDPATypedStructURL {
		return url, err
	}
	ts := new(xdstypev3.TypedStruct) // the udpa TypedStruct has the same fields
	if err := decoding.Unmarshal(cfg.GetValue(), ts); err != nil {
		return "", err
	}
	inner, err := decoding.CanonicalTypeURL(ts.GetTypeUrl())
	switch {
	case err != nil:
		return "", fmt.Errorf("TypedStruct: %v", err)
	case inner == rls.ClusterSpecifierTypeURL:
		return "", fmt.Errorf("a config of type %q in a TypedStruct is not supported", inner)
	}
	return inner, nil
}

// validateVirtualHost validates m; errors start with at, the path of m.
func validateVirtualHost(trustedServer bool, m *routev3.VirtualHost, at string, plugins map[string]*rls.Config) (VirtualHost, error) {
	vh := VirtualHost{Name: m.GetName(), Domains: m.GetDomains()}
	if len(vh.Domains) == 0 {
		return vh, fmt.Errorf("%s: domains is empty", at)
	}
	for i, d := range vh.Domains {
		if !validDomainPattern(d) {
			return vh, fmt.Errorf("%s.domains[%d]: invalid domain pattern %q", at, i, d)
		}
	}
	var err error
	if vh.RetryPolicy, err = validateRetryPolicy(m.GetRetryPolicy()); err != nil {
		return vh, fmt.Errorf("%s.%v", at, err)
	}
	if vh.FilterOverrides, err = filterconfig.ValidateOverrides(m.GetTypedPerFilterConfig()); err != nil {
		return vh, fmt.Errorf("%s.%v", at, err)
	}
	for i, r := range m.GetRoutes() {
		route, keep, err := validateRoute(trustedServer, r, plugins)
		if err != nil {
			return vh, fmt.Errorf("%s.routes[%d]: %v", at, i, err)
		}
		if keep {
			route.Name, route.Index = r.GetName(), i
			vh.Routes = append(vh.Routes, route)
		}
	}
	return vh, nil
}

// validDomainPattern reports whether d is a domain pattern gRPC accepts:
// not empty, and an exact domain or one with a "*" at its start or end. As
// in gRPC C-core and grpc-go, only the first or last character is a
// wildcard: every other "*" stands for itself ("**" is a suffix wildcard
// that matches the hosts ending in "*").
func validDomainPattern(d string) bool {
	return d != "" && (!strings.Contains(d, "*") || d[0] == '*' || d[len(d)-1] == '*')
}

// validateRoute returns the route and whether gRPC uses it. Its steps
// are gRPC C-core's, in C-core's order (ParseRoute in
// src/core/xds/grpc/xds_route_config_parser.cc), so that the parts of a
// route gRPC ignores are validated exactly when C-core validates them:
// nothing after its query_parameters or a path no gRPC method has; its
// matchers, max_stream_duration, hash_policy and retry_policy when its
// cluster specifier is one gRPC ignores; its typed_per_filter_config only
// when it is used (a cluster_header route, kept but never matching, has
// none).
func validateRoute(trustedServer bool, m *routev3.Route, plugins map[string]*rls.Config) (Route, bool, error) {
	r := Route{Name: m.GetName()}
	match := m.GetMatch()
	if match == nil {
		return r, false, errors.New("match missing")
	}
	if len(match.GetQueryParameters()) != 0 {
		return r, false, nil // gRPC ignores routes that match on query parameters
	}
	switch p := match.GetPathSpecifier().(type) {
	case *routev3.RouteMatch_Prefix:
		if !grpcPrefix(p.Prefix) {
			return r, false, nil
		}
		r.PathMatch, r.Prefix = PathPrefix, p.Prefix
	case *routev3.RouteMatch_Path:
		if !grpcPath(p.Path) {
			return r, false, nil
		}
		r.PathMatch, r.Path = PathExact, p.Path
	case *routev3.RouteMatch_SafeRegex:
		r.PathMatch, r.SafeRegex = PathRegex, p.SafeRegex.GetRegex()
		if err := matcher.CheckWholeRegex(r.SafeRegex); err != nil {
			return r, false, fmt.Errorf("match.safe_regex: %v", err)
		}
	case nil:
		return r, false, errors.New("match has no path specifier (prefix, path or safe_regex)")
	default:
		pm := match.ProtoReflect()
		field := pm.WhichOneof(pm.Descriptor().Oneofs().ByName("path_specifier")).Name()
		return r, false, fmt.Errorf("match: unsupported path specifier %s", field)
	}
	if cs := match.GetCaseSensitive(); cs != nil {
		r.CaseInsensitive = !cs.GetValue()
	}
	for i, h := range match.GetHeaders() {
		hm, err := matcher.ValidateHeader(h)
		if err != nil {
			return r, false, fmt.Errorf("match.headers[%d]: %v", i, err)
		}
		r.Headers = append(r.Headers, hm)
	}
	if f := match.GetRuntimeFraction(); f.GetDefaultValue() != nil {
		// A runtime_fraction without default_value leaves the route
		// matching every request, as in gRPC C-core (grpc-go reads it
		// as 0 and the route matches none).
		n, err := decoding.PerMillion(f.GetDefaultValue())
		if err != nil {
			return r, false, fmt.Errorf("match.runtime_fraction.default_value: %v", err)
		}
		r.FractionPerMillion = &n
	}

	switch a := m.GetAction().(type) {
	case *routev3.Route_Route:
		keep, err := validateRouteAction(trustedServer, a.Route, &r, plugins)
		if err != nil || !keep {
			return r, false, err
		}
	case *routev3.Route_NonForwardingAction:
		r.Action.Kind = ActionNonForwarding
	default:
		r.Action.Kind = ActionUnsupported
	}
	if r.Action.Kind == ActionClusterHeader {
		// Kept, never matching, for those who describe routes; gRPC
		// ignores it and reads no more of it.
		return r, true, nil
	}
	overrides, err := filterconfig.ValidateOverrides(m.GetTypedPerFilterConfig())
	if err != nil {
		return r, false, err
	}
	r.FilterOverrides = overrides
	return r, true, nil
}

// grpcPrefix reports whether a route's prefix can match a gRPC path,
// "/service/method": it is empty, or it starts with "/" and holds at most
// one more "/", which does not follow the first. gRPC C-core ignores a
// route with any other prefix (RoutePathMatchParse), whatever the rest of
// it says.
func grpcPrefix(prefix string) bool {
	if prefix == "" {
		return true
	}
	if prefix[0] != '/' {
		return false
	}
	parts := strings.SplitN(prefix[1:], "/", 3)
	return len(parts) == 1 || len(parts) == 2 && parts[0] != ""
}

// grpcPath reports whether a route's path is a gRPC path,
// "/service/method" with a service and a method that are not empty; gRPC
// C-core ignores a route with any other path.
func grpcPath(path string) bool {
	if path == "" || path[0] != '/' {
		return false
	}
	parts := strings.SplitN(path[1:], "/", 3)
	return len(parts) == 2 && parts[0] != "" && parts[1] != ""
}

// retryCodes are the retry_on conditions that gRPC understands.
var retryCodes = map[string]bool{
	"cancelled": true, "deadline-exceeded": true, "internal": true,
	"resource-exhausted": true, "unavailable": true,
}
