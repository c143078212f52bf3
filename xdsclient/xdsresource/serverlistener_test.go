package xdsresource

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/serverlistener"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/filterconfig"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// serverName is the name of the server listeners of these tests.
const serverName = "grpc/server?xds.resource.listening_address=0.0.0.0:8443"

// serverLis returns a server listener on 0.0.0.0:8443 with chains.
func serverLis(chains ...*listenerv3.FilterChain) *listenerv3.Listener {
	return &listenerv3.Listener{Name: serverName, Address: sockAddr("0.0.0.0", 8443), FilterChains: chains}
}

// hcmFilter wraps an HttpConnectionManager as the network filter "hcm".
func hcmFilter(t testing.TB, hcm *hcmv3.HttpConnectionManager) *listenerv3.Filter {
	return &listenerv3.Filter{Name: "hcm", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: toAny(t, hcm)}}
}

// chain returns a valid filter chain named name with match m: RDS "r1"
// over ADS and the router.
func chain(t testing.TB, name string, m *listenerv3.FilterChainMatch) *listenerv3.FilterChain {
	return &listenerv3.FilterChain{Name: name, FilterChainMatch: m, Filters: []*listenerv3.Filter{hcmFilter(t, rdsHCM(t))}}
}

func cidr(addr string, bits uint32) *corev3.CidrRange {
	return &corev3.CidrRange{AddressPrefix: addr, PrefixLen: wrapperspb.UInt32(bits)}
}

// downstream returns a DownstreamTlsContext with the identity from
// "identity" and the given changes made to it.
func downstream(change func(d *tlsv3.DownstreamTlsContext)) *tlsv3.DownstreamTlsContext {
	d := &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsCertificateProviderInstance: provider("identity", "id"),
	}}
	if change != nil {
		change(d)
	}
	return d
}

// decodeServer decodes m and returns its serverlistener.Listener.
func decodeServer(t *testing.T, m *listenerv3.Listener) *serverlistener.Listener {
	t.Helper()
	name, v, err := decode(t, ListenerType, m)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	l := v.(*Listener)
	if name != m.GetName() || l.Name != m.GetName() || l.Server == nil {
		t.Fatalf("Decode = %q, %+v, want server listener %q", name, l, m.GetName())
	}
	if l.RouteConfigName != "" || l.InlineRouteConfig != nil || l.HTTPFilters != nil {
		t.Errorf("server listener has client fields: %+v", l)
	}
	return l.Server
}

// chainNames returns the names of chains.
func chainNames(chains []serverlistener.FilterChain) []string {
	var out []string
	for _, c := range chains {
		out = append(out, c.Name)
	}
	return out
}

func TestServerListener(t *testing.T) {
	m := serverLis(chain(t, "plain", nil))
	m.DefaultFilterChain = chain(t, "default", nil)
	m.DefaultFilterChain.TransportSocket = tlsSocket(t, downstream(func(d *tlsv3.DownstreamTlsContext) {
		d.RequireClientCertificate = wrapperspb.Bool(true)
		d.CommonTlsContext.ValidationContextType = caContext("roots")
	}))
	s := decodeServer(t, m)
	router := []filterconfig.Filter{{Name: "router", TypeURL: filterconfig.RouterTypeURL}}
	for _, c := range append(s.FilterChains, *s.DefaultFilterChain) {
		if len(c.HTTPFilters) != 1 || c.HTTPFilters[0].Config == nil {
			t.Fatalf("chain %q HTTPFilters = %+v, want the router", c.Name, c.HTTPFilters)
		}
		c.HTTPFilters[0].Config = nil
	}
	want := &serverlistener.Listener{
		Address:      "0.0.0.0",
		Port:         8443,
		FilterChains: []serverlistener.FilterChain{{Name: "plain", RouteConfigName: "r1", HTTPFilters: router}},
		DefaultFilterChain: &serverlistener.FilterChain{Name: "default", RouteConfigName: "r1", HTTPFilters: router, Security: &security.Config{
			IdentityInstance: "identity", IdentityCertName: "id", RootInstance: "roots", RootCertName: "ca", RequireClientCert: true,
		}},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("ServerListener =\n%+v\nwant\n%+v", s, want)
	}
	l := &Listener{Name: serverName, Server: s}
	if got, want := l.Summary(), "server listener "+serverName+": 0.0.0.0:8443, 1 filter chain and a default"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
}

// TestServerListenerUnnamedNetworkFilter: a network filter's name is not
// read, as in C-core (FilterChainParse reads only its typed_config), so a
// filter without one is served (grpc-go rejects it).
func TestServerListenerUnnamedNetworkFilter(t *testing.T) {
	m := serverLis(chain(t, "plain", nil))
	m.DefaultFilterChain = chain(t, "default", nil)
	m.FilterChains[0].Filters[0].Name = ""
	m.DefaultFilterChain.Filters[0].Name = ""
	s := decodeServer(t, m)
	if len(s.FilterChains) != 1 || s.FilterChains[0].RouteConfigName != "r1" || s.DefaultFilterChain == nil || s.DefaultFilterChain.RouteConfigName != "r1" {
		t.Fatalf("ServerListener = %+v, want both chains with their route configuration", s)
	}
}

func TestServerListenerOnlyDefaultChain(t *testing.T) {
	m := serverLis()
	m.DefaultFilterChain = chain(t, "default", nil)
	if s := decodeServer(t, m); len(s.FilterChains) != 0 || s.DefaultFilterChain == nil {
		t.Errorf("ServerListener = %+v, want only a default chain", s)
	}
}

func TestServerListenerMatch(t *testing.T) {
	m := serverLis(
		chain(t, "v4", &listenerv3.FilterChainMatch{
			PrefixRanges:       []*corev3.CidrRange{cidr("10.1.2.3", 8), cidr("::ffff:192.168.7.1", 112)},
			SourceType:         listenerv3.FilterChainMatch_EXTERNAL,
			SourcePrefixRanges: []*corev3.CidrRange{cidr("2001:db8::1", 32)},
			SourcePorts:        []uint32{80, 443},
		}),
		chain(t, "loopback", &listenerv3.FilterChainMatch{SourceType: listenerv3.FilterChainMatch_SAME_IP_OR_LOOPBACK}),
		// The same match as "v4" but for another source port: no overlap.
		chain(t, "other-port", &listenerv3.FilterChainMatch{
			PrefixRanges:       []*corev3.CidrRange{cidr("10.0.0.0", 8)},
			SourceType:         listenerv3.FilterChainMatch_EXTERNAL,
			SourcePrefixRanges: []*corev3.CidrRange{cidr("2001:db8::", 32)},
			SourcePorts:        []uint32{8080},
		}),
		// 0.0.0.0/0 is a prefix of its own, distinct from no prefix.
		chain(t, "all-v4", &listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("0.0.0.0", 0)}}),
		chain(t, "any", nil),
	)
	s := decodeServer(t, m)
	if got, want := chainNames(s.FilterChains), []string{"v4", "loopback", "other-port", "all-v4", "any"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("chains = %q, want %q", got, want)
	}
	want := serverlistener.FilterChainMatch{
		DestinationPrefixes: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.0.0/16")},
		SourceType:          serverlistener.SourceExternal,
		SourcePrefixes:      []netip.Prefix{netip.MustParsePrefix("2001:db8::/32")},
		SourcePorts:         []uint32{80, 443},
	}
	if got := s.FilterChains[0].Match; !reflect.DeepEqual(got, want) {
		t.Errorf("Match = %+v, want %+v", got, want)
	}
	if got := s.FilterChains[1].Match; !reflect.DeepEqual(got, serverlistener.FilterChainMatch{SourceType: serverlistener.SourceSameIPOrLoopback}) {
		t.Errorf("loopback Match = %+v", got)
	}
	if got := serverlistener.SourceSameIPOrLoopback.String(); got != "SAME_IP_OR_LOOPBACK" {
		t.Errorf("String() = %q", got)
	}
}

// Chains whose match uses a field that gRPC does not support are dropped
// (once validated, as in gRPC C-core: see package serverlistener's
// TestDroppedChainsValidated) and do not count for overlaps: each of
// these matches every connection the used chain matches.
func TestServerListenerIgnoredChains(t *testing.T) {
	m := serverLis(
		chain(t, "dst-port", &listenerv3.FilterChainMatch{DestinationPort: wrapperspb.UInt32(8443)}),
		chain(t, "sni", &listenerv3.FilterChainMatch{ServerNames: []string{"a.example.com"}}),
		chain(t, "tls", &listenerv3.FilterChainMatch{TransportProtocol: "tls"}),
		chain(t, "alpn", &listenerv3.FilterChainMatch{ApplicationProtocols: []string{"h2"}}),
		chain(t, "used", nil),
	)
	if got := chainNames(decodeServer(t, m).FilterChains); !reflect.DeepEqual(got, []string{"used"}) {
		t.Errorf("chains = %q, want [used]", got)
	}
}

// A chain with transport_protocol "raw_buffer" replaces, for its
// destination prefixes, the chains without a transport_protocol, earlier
// and later ones alike.
func TestServerListenerRawBuffer(t *testing.T) {
	m := serverLis(
		chain(t, "early", nil),
		chain(t, "raw", &listenerv3.FilterChainMatch{TransportProtocol: "raw_buffer"}),
		chain(t, "late", nil),
		chain(t, "elsewhere", &listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("10.0.0.0", 8)}}),
	)
	s := decodeServer(t, m)
	if got, want := chainNames(s.FilterChains), []string{"raw", "elsewhere"}; !reflect.DeepEqual(got, want) {
		t.Errorf("chains = %q, want %q", got, want)
	}
	if s.FilterChains[0].Match.TransportProtocol != "raw_buffer" {
		t.Errorf("Match = %+v, want raw_buffer", s.FilterChains[0].Match)
	}
}

func TestServerListenerHTTPFilters(t *testing.T) {
	hcm := rdsHCM(t)
	fault := httpFilter(t, "fault", &faultv3.HTTPFault{})
	fault.IsOptional = true
	hcm.HttpFilters = append([]*hcmv3.HttpFilter{httpFilter(t, "rbac", &rbacv3.RBAC{}), fault}, hcm.HttpFilters...)
	hcm.RouteSpecifier = &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
		VirtualHosts: []*routev3.VirtualHost{{Name: "vh", Domains: []string{"*"}, Routes: []*routev3.Route{{
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
			Action: &routev3.Route_NonForwardingAction{NonForwardingAction: &routev3.NonForwardingAction{}},
		}}}},
	}}
	c := chain(t, "c", nil)
	c.Filters = []*listenerv3.Filter{hcmFilter(t, hcm)}
	s := decodeServer(t, serverLis(c))
	fc := s.FilterChains[0]
	if len(fc.HTTPFilters) != 2 || fc.HTTPFilters[0].TypeURL != filterconfig.RBACTypeURL || fc.HTTPFilters[1].TypeURL != filterconfig.RouterTypeURL {
		t.Errorf("HTTPFilters = %+v, want RBAC and the router (fault is client-only and optional)", fc.HTTPFilters)
	}
	if fc.RouteConfigName != "" || fc.InlineRouteConfig == nil || fc.InlineRouteConfig.VirtualHosts[0].Routes[0].Action.Kind != routeconfig.ActionNonForwarding {
		t.Errorf("route config = %q, %+v, want inline non_forwarding", fc.RouteConfigName, fc.InlineRouteConfig)
	}
}

func TestServerListenerErrors(t *testing.T) {
	lis := func(edit func(m *listenerv3.Listener)) func() proto.Message {
		return func() proto.Message {
			m := serverLis(chain(t, "c0", nil))
			edit(m)
			return m
		}
	}
	chains := func(cs ...*listenerv3.FilterChain) func() proto.Message {
		return func() proto.Message { return serverLis(cs...) }
	}
	withHCM := func(edit func(h *hcmv3.HttpConnectionManager)) func() proto.Message {
		return lis(func(m *listenerv3.Listener) {
			h := rdsHCM(t)
			edit(h)
			m.FilterChains[0].Filters = []*listenerv3.Filter{hcmFilter(t, h)}
		})
	}
	withTLS := func(ctx proto.Message) func() proto.Message {
		return lis(func(m *listenerv3.Listener) { m.FilterChains[0].TransportSocket = tlsSocket(t, ctx) })
	}
	match := func(m *listenerv3.FilterChainMatch) *listenerv3.FilterChain { return chain(t, "c", m) }
	ports := func(p ...uint32) *listenerv3.FilterChainMatch { return &listenerv3.FilterChainMatch{SourcePorts: p} }
	const lds = `lds "` + serverName + `": `
	const fc0 = lds + `filter_chains[0].`
	const tls0 = fc0 + `transport_socket.typed_config.`
	runErrorCases(t, ListenerType, serverName, []errorCase{
		{name: "listener_filters", build: lis(func(m *listenerv3.Listener) {
			m.ListenerFilters = []*listenerv3.ListenerFilter{{Name: "tls_inspector"}}
		}),
			want: lds + `listener_filters: not supported (1 entry)`},
		{name: "use_original_dst", build: lis(func(m *listenerv3.Listener) { m.UseOriginalDst = wrapperspb.Bool(true) }),
			want: lds + `use_original_dst: true is not supported`},
		{name: "no address", build: lis(func(m *listenerv3.Listener) { m.Address = nil }),
			want: lds + `address: missing, a listener without api_listener is a server listener and needs one`},
		{name: "pipe address", build: lis(func(m *listenerv3.Listener) {
			m.Address = &corev3.Address{Address: &corev3.Address_Pipe{Pipe: &corev3.Pipe{Path: "/tmp/s"}}}
		}), want: lds + `address.socket_address: missing`},
		{name: "no chains", build: chains(),
			want: lds + `filter_chains: none that gRPC supports, and no default_filter_chain`},
		{name: "only ignored chains", build: chains(match(&listenerv3.FilterChainMatch{ServerNames: []string{"x"}})),
			want: lds + `filter_chains: none that gRPC supports, and no default_filter_chain`},
		{name: "identical matches", build: chains(match(nil), match(nil)),
			want: lds + `filter_chains[1].filter_chain_match: overlaps filter_chains[0]`},
		{name: "shared source port", build: chains(match(ports(1, 2)), match(ports(3)), match(ports(4, 2))),
			want: lds + `filter_chains[2].filter_chain_match: overlaps filter_chains[0]`},
		{name: "same prefix once masked", build: chains(
			match(&listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("10.1.0.0", 16)}}),
			match(&listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("192.168.0.0", 16), cidr("::ffff:10.1.2.3", 112)}})),
			want: lds + `filter_chains[1].filter_chain_match: overlaps filter_chains[0]`},
		{name: "same source prefix and type", build: chains(
			match(&listenerv3.FilterChainMatch{SourceType: listenerv3.FilterChainMatch_EXTERNAL, SourcePrefixRanges: []*corev3.CidrRange{cidr("10.0.0.0", 8)}}),
			match(&listenerv3.FilterChainMatch{SourceType: listenerv3.FilterChainMatch_EXTERNAL, SourcePrefixRanges: []*corev3.CidrRange{cidr("10.9.9.9", 8)}})),
			want: lds + `filter_chains[1].filter_chain_match: overlaps filter_chains[0]`},
		{name: "two raw_buffer chains", build: chains(
			match(&listenerv3.FilterChainMatch{TransportProtocol: "raw_buffer"}),
			match(&listenerv3.FilterChainMatch{TransportProtocol: "raw_buffer"})),
			want: lds + `filter_chains[1].filter_chain_match: overlaps filter_chains[0]`},
		{name: "same port twice", build: chains(match(ports(80, 80))),
			want: fc0 + `filter_chain_match: lists the same match twice`},
		{name: "bad destination address", build: chains(match(&listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("10.0.0.0", 8), cidr("ten", 8)}})),
			want: fc0 + `filter_chain_match.prefix_ranges[1].address_prefix: "ten" is not an IP address`},
		{name: "destination prefix too long", build: chains(match(&listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("::ffff:10.0.0.1", 129)}})),
			want: fc0 + `filter_chain_match.prefix_ranges[0].prefix_len: 129 is longer than the 128 bits of "::ffff:10.0.0.1"`},
		{name: "bad source address", build: chains(match(&listenerv3.FilterChainMatch{SourcePrefixRanges: []*corev3.CidrRange{cidr("", 0)}})),
			want: fc0 + `filter_chain_match.source_prefix_ranges[0].address_prefix: "" is not an IP address`},
		{name: "unknown source type", build: chains(match(&listenerv3.FilterChainMatch{SourceType: 7})),
			want: fc0 + `filter_chain_match.source_type: 7 is not supported`},
		{name: "no network filter", build: lis(func(m *listenerv3.Listener) { m.FilterChains[0].Filters = nil }),
			want: fc0 + `filters: has 0 filters, want exactly one, the HttpConnectionManager`},
		{name: "two HttpConnectionManagers", build: lis(func(m *listenerv3.Listener) {
			m.FilterChains[0].Filters = append(m.FilterChains[0].Filters, hcmFilter(t, rdsHCM(t)))
		}), want: fc0 + `filters: has 2 filters, want exactly one, the HttpConnectionManager`},
		{name: "network filter from discovery", build: lis(func(m *listenerv3.Listener) {
			m.FilterChains[0].Filters[0].ConfigType = &listenerv3.Filter_ConfigDiscovery{}
		}), want: fc0 + `filters[0] "hcm": typed_config missing`},
		{name: "other network filter", build: lis(func(m *listenerv3.Listener) {
			m.FilterChains[0].Filters[0].ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: toAny(t, &rbacv3.RBAC{})}
		}), want: fc0 + `filters[0] "hcm": network filter type "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC" is not supported, want "` + routeconfig.ConnectionManagerTypeURL + `"`},
		{name: "HttpConnectionManager bytes invalid", build: lis(func(m *listenerv3.Listener) {
			m.FilterChains[0].Filters[0].ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: &anypb.Any{TypeUrl: routeconfig.ConnectionManagerTypeURL, Value: []byte{0xff}}}
		}), want: fc0 + `filters[0] "hcm": cannot unmarshal envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager: `, prefix: true},
		{name: "rds from self", build: withHCM(func(h *hcmv3.HttpConnectionManager) { h.GetRds().ConfigSource = selfSource }),
			want: fc0 + `filters[0] "hcm": rds.config_source must be ads`},
		{name: "xff_num_trusted_hops", build: withHCM(func(h *hcmv3.HttpConnectionManager) { h.XffNumTrustedHops = 1 }),
			want: fc0 + `filters[0] "hcm": xff_num_trusted_hops is 1, must be 0`},
		{name: "bad inline route config", build: withHCM(func(h *hcmv3.HttpConnectionManager) {
			h.RouteSpecifier = &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{VirtualHosts: []*routev3.VirtualHost{{Name: "vh"}}}}
		}), want: fc0 + `filters[0] "hcm": route_config: virtual_hosts[0]: domains is empty`},
		{name: "client-only filter on a server", build: withHCM(func(h *hcmv3.HttpConnectionManager) {
			h.HttpFilters = append([]*hcmv3.HttpFilter{httpFilter(t, "fault", &faultv3.HTTPFault{})}, h.HttpFilters...)
		}), want: fc0 + `filters[0] "hcm": http_filters[0] "fault": filter type "` + filterconfig.FaultTypeURL + `" is not supported on servers`},
		{name: "no router", build: withHCM(func(h *hcmv3.HttpConnectionManager) {
			h.HttpFilters = []*hcmv3.HttpFilter{httpFilter(t, "rbac", &rbacv3.RBAC{})}
		}),
			want: fc0 + `filters[0] "hcm": http_filters: last filter "rbac" is not the router`},
		{name: "bad default chain", build: lis(func(m *listenerv3.Listener) {
			m.DefaultFilterChain = chain(t, "d", nil)
			m.DefaultFilterChain.Filters[0].ConfigType = nil
		}), want: lds + `default_filter_chain.filters[0] "hcm": typed_config missing`},

		// DownstreamTlsContext (gRFC A29).
		{name: "upstream context on a server", build: withTLS(upstream(nil)),
			want: fc0 + `transport_socket.typed_config: type "` + security.UpstreamTLSContextTypeURL + `" is not supported, want "` + security.DownstreamTLSContextTypeURL + `"`},
		{name: "require_sni", build: withTLS(downstream(func(d *tlsv3.DownstreamTlsContext) { d.RequireSni = wrapperspb.Bool(true) })),
			want: tls0 + `require_sni: not supported`},
		{name: "ocsp stapling", build: withTLS(downstream(func(d *tlsv3.DownstreamTlsContext) {
			d.OcspStaplePolicy = tlsv3.DownstreamTlsContext_MUST_STAPLE
		})), want: tls0 + `ocsp_staple_policy: MUST_STAPLE is not supported, want LENIENT_STAPLING`},
		{name: "no common_tls_context", build: withTLS(&tlsv3.DownstreamTlsContext{}),
			want: tls0 + `common_tls_context: missing`},
		{name: "no identity", build: withTLS(downstream(func(d *tlsv3.DownstreamTlsContext) {
			d.CommonTlsContext.TlsCertificateProviderInstance = nil
			d.CommonTlsContext.ValidationContextType = caContext("roots")
		})), want: tls0 + `common_tls_context.tls_certificate_provider_instance: missing, a server needs an identity certificate`},
		{name: "inline identity", build: withTLS(downstream(func(d *tlsv3.DownstreamTlsContext) {
			d.CommonTlsContext.TlsCertificateProviderInstance = nil
			d.CommonTlsContext.TlsCertificates = []*tlsv3.TlsCertificate{{}}
		})), want: tls0 + `common_tls_context.tls_certificates: not supported, use tls_certificate_provider_instance`},
		{name: "private key beside a deprecated identity", build: withTLS(downstream(func(d *tlsv3.DownstreamTlsContext) {
			d.CommonTlsContext.TlsCertificateProviderInstance = nil
			d.CommonTlsContext.TlsCertificateCertificateProviderInstance = deprecatedInstance("identity", "")
			d.CommonTlsContext.TlsCertificates = []*tlsv3.TlsCertificate{inlineKey}
		})), want: tls0 + `common_tls_context.tls_certificates: not supported, use tls_certificate_provider_instance`},
		{name: "private key beside an identity instance", build: withTLS(downstream(func(d *tlsv3.DownstreamTlsContext) {
			d.CommonTlsContext.TlsCertificates = []*tlsv3.TlsCertificate{inlineKey}
		})), want: tls0 + `common_tls_context.tls_certificates: not supported, use tls_certificate_provider_instance`},
		{name: "unsupported field beside a deprecated root", build: withTLS(downstream(func(d *tlsv3.DownstreamTlsContext) {
			d.CommonTlsContext.ValidationContextType = &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
				DefaultValidationContext:                     &tlsv3.CertificateValidationContext{Crl: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: "crl"}}},
				ValidationContextCertificateProviderInstance: deprecatedInstance("roots", ""),
			}}
		})), want: tls0 + `common_tls_context.combined_validation_context.default_validation_context.crl: not supported`},
		{name: "unknown identity instance", build: withTLS(downstream(func(d *tlsv3.DownstreamTlsContext) {
			d.CommonTlsContext.TlsCertificateProviderInstance = provider("gone", "")
		})), want: tls0 + `common_tls_context.tls_certificate_provider_instance.instance_name: "gone" is not in the bootstrap's certificate_providers`},
		{name: "client certificate without roots", build: withTLS(downstream(func(d *tlsv3.DownstreamTlsContext) {
			d.RequireClientCertificate = wrapperspb.Bool(true)
		})), want: tls0 + `require_client_certificate: true, but common_tls_context has no ca_certificate_provider_instance`},
		{name: "SAN matchers on a server", build: withTLS(downstream(func(d *tlsv3.DownstreamTlsContext) {
			d.CommonTlsContext.ValidationContextType = caContext("roots", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "x"}})
		})), want: tls0 + `common_tls_context.validation_context.match_subject_alt_names: not supported on servers`},
	})
}

// A chain without transport_protocol loses to a raw_buffer chain only for
// the destination prefixes they share.
func TestServerListenerRawBufferPartly(t *testing.T) {
	m := serverLis(
		chain(t, "two", &listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("10.0.0.0", 8), cidr("192.168.0.0", 16)}}),
		chain(t, "raw", &listenerv3.FilterChainMatch{TransportProtocol: "raw_buffer", PrefixRanges: []*corev3.CidrRange{cidr("10.0.0.0", 8)}}),
	)
	s := decodeServer(t, m)
	if got, want := chainNames(s.FilterChains), []string{"two", "raw"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("chains = %q, want %q", got, want)
	}
	if got, want := s.FilterChains[0].Match.DestinationPrefixes, []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")}; !reflect.DeepEqual(got, want) {
		t.Errorf("DestinationPrefixes of two = %v, want %v", got, want)
	}
}
