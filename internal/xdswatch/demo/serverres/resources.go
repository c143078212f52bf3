// Package serverres builds the resources that xDS-enabled servers are
// served with in tests and in the xdswatch demo: server Listeners, their
// filter chains with TLS, route configurations with non-forwarding
// routes, and RBAC filters.
package serverres

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Listener returns a server Listener named name on host:port with chains
// and, when def is not nil, the default filter chain def.
func Listener(name, host string, port uint32, def *listenerv3.FilterChain, chains ...*listenerv3.FilterChain) *listenerv3.Listener {
	return &listenerv3.Listener{
		Name: name,
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address:       host,
			PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
		}}},
		FilterChains:       chains,
		DefaultFilterChain: def,
	}
}

// Chain returns a filter chain named name that matches m (every
// connection when nil), runs hcm and, when tls is not nil, applies it.
func Chain(name string, m *listenerv3.FilterChainMatch, hcm *hcmv3.HttpConnectionManager, tls *tlsv3.DownstreamTlsContext) *listenerv3.FilterChain {
	fc := &listenerv3.FilterChain{
		Name:             name,
		FilterChainMatch: m,
		Filters: []*listenerv3.Filter{{
			Name:       "envoy.filters.network.http_connection_manager",
			ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: MustAny(hcm)},
		}},
	}
	if tls != nil {
		fc.TransportSocket = &corev3.TransportSocket{
			Name:       "envoy.transport_sockets.tls",
			ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: MustAny(tls)},
		}
	}
	return fc
}

// CIDR is a CIDR range.
func CIDR(addr string, bits uint32) *corev3.CidrRange {
	return &corev3.CidrRange{AddressPrefix: addr, PrefixLen: wrapperspb.UInt32(bits)}
}

// InlineHCM returns an HttpConnectionManager with rc inline and filters,
// then the router.
func InlineHCM(rc *routev3.RouteConfiguration, filters ...*hcmv3.HttpFilter) *hcmv3.HttpConnectionManager {
	return &hcmv3.HttpConnectionManager{
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: rc},
		HttpFilters:    append(filters, Router()),
	}
}

// RDSHCM returns an HttpConnectionManager that fetches the route
// configuration name over ADS and runs filters, then the router.
func RDSHCM(name string, filters ...*hcmv3.HttpFilter) *hcmv3.HttpConnectionManager {
	return &hcmv3.HttpConnectionManager{
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource:    &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}, ResourceApiVersion: corev3.ApiVersion_V3},
			RouteConfigName: name,
		}},
		HttpFilters: append(filters, Router()),
	}
}

// Router is the router filter.
func Router() *hcmv3.HttpFilter { return Filter("router", &routerv3.Router{}) }

// Filter is the HTTP filter name with config cfg.
func Filter(name string, cfg proto.Message) *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{Name: name, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: MustAny(cfg)}}
}

// Routes returns a route configuration named name with one virtual host
// for every authority holding routes.
func Routes(name string, routes ...*routev3.Route) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{
		Name:         name,
		VirtualHosts: []*routev3.VirtualHost{{Name: name + "-vh", Domains: []string{"*"}, Routes: routes}},
	}
}

// Serve is a route with non_forwarding_action for the paths starting with
// prefix: the route an xDS-enabled server serves.
func Serve(prefix string) *routev3.Route {
	return &routev3.Route{
		Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: prefix}},
		Action: &routev3.Route_NonForwardingAction{NonForwardingAction: &routev3.NonForwardingAction{}},
	}
}

// Forward is a route to cluster for the paths starting with prefix, which
// a server does not serve.
func Forward(prefix, cluster string) *routev3.Route {
	return &routev3.Route{
		Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: prefix}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster}}},
	}
}

// TLS returns a DownstreamTlsContext with the identity and, when roots is
// not empty, the client roots of those certificate provider instances.
func TLS(identity, roots string, requireClientCert bool) *tlsv3.DownstreamTlsContext {
	ctx := &tlsv3.DownstreamTlsContext{
		CommonTlsContext: &tlsv3.CommonTlsContext{
			TlsCertificateProviderInstance: &tlsv3.CertificateProviderPluginInstance{InstanceName: identity},
		},
		RequireClientCertificate: wrapperspb.Bool(requireClientCert),
	}
	if roots != "" {
		ctx.CommonTlsContext.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{
			ValidationContext: &tlsv3.CertificateValidationContext{
				CaCertificateProviderInstance: &tlsv3.CertificateProviderPluginInstance{InstanceName: roots},
			},
		}
	}
	return ctx
}

// RBAC is an RBAC filter named name with the rules action and policies.
func RBAC(name string, action rbacconfigv3.RBAC_Action, policies map[string]*rbacconfigv3.Policy) *hcmv3.HttpFilter {
	return Filter(name, &rbacv3.RBAC{Rules: &rbacconfigv3.RBAC{Action: action, Policies: policies}})
}

// Policy is an RBAC policy of one permission and one principal.
func Policy(perm *rbacconfigv3.Permission, id *rbacconfigv3.Principal) *rbacconfigv3.Policy {
	return &rbacconfigv3.Policy{Permissions: []*rbacconfigv3.Permission{perm}, Principals: []*rbacconfigv3.Principal{id}}
}

// Builders of RBAC permissions and principals.
var (
	AnyPermission = &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_Any{Any: true}}
	AnyPrincipal  = &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_Any{Any: true}}
)

// PathPrefix is a url_path permission for the methods starting with p.
func PathPrefix(p string) *rbacconfigv3.Permission {
	return &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_UrlPath{UrlPath: &matcherv3.PathMatcher{Rule: &matcherv3.PathMatcher_Path{
		Path: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: p}},
	}}}}
}

// HeaderExact is a header permission: name has the value v.
func HeaderExact(name, v string) *rbacconfigv3.Permission {
	return &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_Header{Header: &routev3.HeaderMatcher{
		Name: name, HeaderMatchSpecifier: &routev3.HeaderMatcher_ExactMatch{ExactMatch: v},
	}}}
}

// PrincipalExact is an authenticated principal named exactly name.
func PrincipalExact(name string) *rbacconfigv3.Principal {
	return &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_Authenticated_{Authenticated: &rbacconfigv3.Principal_Authenticated{
		PrincipalName: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: name}},
	}}}
}

// SourceIP is a principal whose address is in addr/bits.
func SourceIP(addr string, bits uint32) *rbacconfigv3.Principal {
	return &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_DirectRemoteIp{DirectRemoteIp: CIDR(addr, bits)}}
}

// MustAny packs m into an Any; it panics on failure, which only a nil
// message causes.
func MustAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	return a
}
