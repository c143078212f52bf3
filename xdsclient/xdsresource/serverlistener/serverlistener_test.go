package serverlistener_test

import (
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/serverres"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/serverlistener"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// known is a bootstrap with the instance "certs".
func known(name string) bool { return name == "certs" }

// TestValidate: a server Listener's address and chains, each with its
// match, routes, filters and TLS; the default chain apart.
func TestValidate(t *testing.T) {
	match := &listenerv3.FilterChainMatch{
		PrefixRanges: []*corev3.CidrRange{serverres.CIDR("::ffff:10.1.2.3", 104)},
		SourceType:   listenerv3.FilterChainMatch_SAME_IP_OR_LOOPBACK,
		SourcePorts:  []uint32{4000},
	}
	m := serverres.Listener("s1", "0.0.0.0", 8443,
		serverres.Chain("default", nil, serverres.RDSHCM("r-default"), nil),
		serverres.Chain("mtls", match, serverres.RDSHCM("r1"), serverres.TLS("certs", "certs", true)),
	)
	got, err := serverlistener.Validate(m, false, known)
	if err != nil {
		t.Fatal(err)
	}
	if got.Address != "0.0.0.0" || got.Port != 8443 || len(got.FilterChains) != 1 || got.DefaultFilterChain == nil {
		t.Fatalf("Validate = %+v, want 0.0.0.0:8443 with one chain and a default", got)
	}
	c := got.FilterChains[0]
	wantMatch := serverlistener.FilterChainMatch{
		DestinationPrefixes: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, // the IPv4 range the mapped range holds, masked
		SourceType:          serverlistener.SourceSameIPOrLoopback,
		SourcePorts:         []uint32{4000},
	}
	if c.Name != "mtls" || c.RouteConfigName != "r1" || len(c.HTTPFilters) != 1 || !reflect.DeepEqual(c.Match, wantMatch) {
		t.Errorf("chain %+v, want mtls to r1 with the match %+v", c, wantMatch)
	}
	wantTLS := security.Config{IdentityInstance: "certs", RootInstance: "certs", RequireClientCert: true}
	if c.Security == nil || c.Security.IdentityInstance != wantTLS.IdentityInstance || c.Security.RootInstance != wantTLS.RootInstance || !c.Security.RequireClientCert {
		t.Errorf("chain security %+v, want %+v", c.Security, wantTLS)
	}
	if d := got.DefaultFilterChain; d.Name != "default" || d.RouteConfigName != "r-default" || d.Security != nil || !reflect.DeepEqual(d.Match, serverlistener.FilterChainMatch{}) {
		t.Errorf("default chain %+v", d)
	}
	if s := got.Summary("s1"); s != "server listener s1: 0.0.0.0:8443, 1 filter chain and a default" {
		t.Errorf("Summary = %q", s)
	}
	if serverlistener.SourceExternal.String() != "EXTERNAL" {
		t.Errorf("SourceExternal.String() = %q", serverlistener.SourceExternal.String())
	}
}

// TestValidateErrors: what gRPC rejects, named by its path.
func TestValidateErrors(t *testing.T) {
	chain := func(name string, m *listenerv3.FilterChainMatch) *listenerv3.FilterChain {
		return serverres.Chain(name, m, serverres.RDSHCM("r1"), nil)
	}
	onPort := &listenerv3.FilterChainMatch{DestinationPort: wrapperspb.UInt32(443)}
	badPrefix := &listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{serverres.CIDR("10.0.0.0", 33)}}
	noAddress := serverres.Listener("s1", "0.0.0.0", 1, chain("d", nil))
	noAddress.Address = nil
	// The default chain's match is validated, as in C-core, though unused.
	badDefaultMatch := serverres.Listener("s1", "0.0.0.0", 1, chain("d", &listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{serverres.CIDR("ten", 8)}}))
	for _, tc := range []struct {
		name string
		m    *listenerv3.Listener
		want string
	}{
		{"two chains with the same match", serverres.Listener("s1", "0.0.0.0", 1, nil, chain("a", nil), chain("b", nil)),
			"filter_chains[1].filter_chain_match: overlaps filter_chains[0]"},
		{"only a chain gRPC ignores", serverres.Listener("s1", "0.0.0.0", 1, nil, chain("a", onPort)),
			"filter_chains: none that gRPC supports, and no default_filter_chain"},
		{"a prefix longer than its address", serverres.Listener("s1", "0.0.0.0", 1, nil, chain("a", badPrefix)),
			`filter_chains[0].filter_chain_match.prefix_ranges[0].prefix_len: 33 is longer than the 32 bits of "10.0.0.0"`},
		{"no address", noAddress, "address: missing, a listener without api_listener is a server listener and needs one"},
		{"a default chain whose match has a bad prefix", badDefaultMatch, `default_filter_chain.filter_chain_match.prefix_ranges[0].address_prefix: "ten" is not an IP address`},
		{"an instance the bootstrap lacks", serverres.Listener("s1", "0.0.0.0", 1, serverres.Chain("d", nil, serverres.RDSHCM("r1"), serverres.TLS("other", "", false))),
			`default_filter_chain.transport_socket.typed_config.common_tls_context.tls_certificate_provider_instance.instance_name: "other" is not in the bootstrap's certificate_providers`},
	} {
		if _, err := serverlistener.Validate(tc.m, false, known); err == nil || err.Error() != tc.want {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestMappedPrefixes: an IPv4-mapped IPv6 range is read with its 128-bit
// length: one of at least 96 bits is the IPv4 range it holds, a shorter
// one the IPv6 range it is, which holds no IPv4 address.
func TestMappedPrefixes(t *testing.T) {
	want := map[string]string{ // a range as written: the prefix it is
		"::ffff:10.0.0.0/104": "10.0.0.0/8",
		"::ffff:10.1.2.3/128": "10.1.2.3/32",
		"::ffff:10.1.2.3/96":  "0.0.0.0/0",
		"::ffff:10.1.2.3/8":   "::/8",
		"::ffff:10.1.2.3/95":  "::fffe:0:0/95",
		"10.1.2.3/8":          "10.0.0.0/8",
	}
	for written, prefix := range want {
		addr, bits, _ := strings.Cut(written, "/")
		n, err := strconv.Atoi(bits)
		if err != nil {
			t.Fatal(err)
		}
		r := serverres.CIDR(addr, uint32(n))
		m := serverres.Listener("s1", "0.0.0.0", 8443, nil, serverres.Chain("c", &listenerv3.FilterChainMatch{
			PrefixRanges: []*corev3.CidrRange{r}, SourcePrefixRanges: []*corev3.CidrRange{r},
		}, serverres.RDSHCM("r"), nil))
		got, err := serverlistener.Validate(m, false, known)
		if err != nil {
			t.Errorf("%s: %v", written, err)
			continue
		}
		p := []netip.Prefix{netip.MustParsePrefix(prefix)}
		if match := got.FilterChains[0].Match; !reflect.DeepEqual(match.DestinationPrefixes, p) || !reflect.DeepEqual(match.SourcePrefixes, p) {
			t.Errorf("%s: prefixes %v and %v, want %v", written, match.DestinationPrefixes, match.SourcePrefixes, p)
		}
	}
	if _, err := serverlistener.Validate(serverres.Listener("s1", "0.0.0.0", 8443, nil, serverres.Chain("c", &listenerv3.FilterChainMatch{
		PrefixRanges: []*corev3.CidrRange{serverres.CIDR("::ffff:10.0.0.0", 129)},
	}, serverres.RDSHCM("r"), nil)), false, known); err == nil {
		t.Error("a range of 129 bits was accepted")
	}
}

// TestDroppedChainsValidated: a chain that gRPC drops is validated first,
// whole, as gRPC C-core validates every chain before it builds its chain
// map (FilterChainParse, then BuildFilterChainMap, in
// xds_listener_parser.cc), so invalid content NACKs the Listener whatever
// made the chain dropped; what C-core reads only while building the map
// (source_type, overlaps) is not checked in a dropped chain. Each row is
// tried with each kind of dropped chain, after a used raw_buffer chain
// for 10.0.0.0/8 that each would overlap if it were used.
func TestDroppedChainsValidated(t *testing.T) {
	dst := func() []*corev3.CidrRange { return []*corev3.CidrRange{serverres.CIDR("10.0.0.0", 8)} }
	kinds := map[string]func() *listenerv3.FilterChainMatch{
		"destination_port": func() *listenerv3.FilterChainMatch {
			return &listenerv3.FilterChainMatch{PrefixRanges: dst(), TransportProtocol: "raw_buffer", DestinationPort: wrapperspb.UInt32(8443)}
		},
		"server_names": func() *listenerv3.FilterChainMatch {
			return &listenerv3.FilterChainMatch{PrefixRanges: dst(), TransportProtocol: "raw_buffer", ServerNames: []string{"a.example.com"}}
		},
		"transport_protocol tls": func() *listenerv3.FilterChainMatch {
			return &listenerv3.FilterChainMatch{PrefixRanges: dst(), TransportProtocol: "tls"}
		},
		"application_protocols": func() *listenerv3.FilterChainMatch {
			return &listenerv3.FilterChainMatch{PrefixRanges: dst(), TransportProtocol: "raw_buffer", ApplicationProtocols: []string{"h2"}}
		},
		"no transport_protocol beside raw_buffer": func() *listenerv3.FilterChainMatch {
			return &listenerv3.FilterChainMatch{PrefixRanges: dst()}
		},
	}
	const at = "filter_chains[1]."
	for _, tc := range []struct {
		name string
		edit func(fc *listenerv3.FilterChain)
		want string // "" when the Listener is accepted, with the used chain alone
	}{
		{"valid content (C-core: dropped, no overlap with the used chain)", func(*listenerv3.FilterChain) {}, ""},
		{"an unknown source_type (C-core: read only in the chain map, which a dropped chain never reaches)", func(fc *listenerv3.FilterChain) {
			fc.FilterChainMatch.SourceType = 7
		}, ""},
		{"a destination prefix that is not an IP address (C-core: NACK)", func(fc *listenerv3.FilterChain) {
			fc.FilterChainMatch.PrefixRanges = append(fc.FilterChainMatch.PrefixRanges, serverres.CIDR("ten", 8))
		}, at + `filter_chain_match.prefix_ranges[1].address_prefix: "ten" is not an IP address`},
		{"a source prefix that is not an IP address (C-core: NACK)", func(fc *listenerv3.FilterChain) {
			fc.FilterChainMatch.SourcePrefixRanges = []*corev3.CidrRange{serverres.CIDR("", 0)}
		}, at + `filter_chain_match.source_prefix_ranges[0].address_prefix: "" is not an IP address`},
		{"a prefix longer than its address (C-core: taken as 32 bits, in every chain; rejected here in every chain)", func(fc *listenerv3.FilterChain) {
			fc.FilterChainMatch.SourcePrefixRanges = []*corev3.CidrRange{serverres.CIDR("10.0.0.0", 33)}
		}, at + `filter_chain_match.source_prefix_ranges[0].prefix_len: 33 is longer than the 32 bits of "10.0.0.0"`},
		{"no network filter (C-core: NACK)", func(fc *listenerv3.FilterChain) { fc.Filters = nil },
			at + `filters: has 0 filters, want exactly one, the HttpConnectionManager`},
		{"two network filters (C-core: NACK)", func(fc *listenerv3.FilterChain) { fc.Filters = append(fc.Filters, fc.Filters[0]) },
			at + `filters: has 2 filters, want exactly one, the HttpConnectionManager`},
		{"a network filter that is not an HttpConnectionManager (C-core: NACK)", func(fc *listenerv3.FilterChain) {
			fc.Filters[0].ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: serverres.MustAny(serverres.Routes("r"))}
		}, at + `filters[0] "envoy.filters.network.http_connection_manager": network filter type "type.googleapis.com/envoy.config.route.v3.RouteConfiguration" is not supported, want "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"`},
		{"xff_num_trusted_hops (C-core: NACK)", editHCM(func(h *hcmv3.HttpConnectionManager) { h.XffNumTrustedHops = 1 }),
			at + `filters[0] "envoy.filters.network.http_connection_manager": xff_num_trusted_hops is 1, must be 0`},
		{"no HTTP filter (C-core: NACK)", editHCM(func(h *hcmv3.HttpConnectionManager) { h.HttpFilters = nil }),
			at + `filters[0] "envoy.filters.network.http_connection_manager": http_filters is empty: the router filter is required`},
		{"an inline virtual host without domains (C-core: NACK)", editHCM(func(h *hcmv3.HttpConnectionManager) {
			rc := serverres.Routes("inline", serverres.Serve("/"))
			rc.VirtualHosts[0].Domains = nil
			h.RouteSpecifier = &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: rc}
		}), at + `filters[0] "envoy.filters.network.http_connection_manager": route_config: virtual_hosts[0]: domains is empty`},
		{"require_sni (C-core: NACK)", func(fc *listenerv3.FilterChain) {
			tls := serverres.TLS("certs", "certs", false)
			tls.RequireSni = wrapperspb.Bool(true)
			fc.TransportSocket = serverres.Chain("", nil, serverres.RDSHCM("r"), tls).TransportSocket
		}, at + `transport_socket.typed_config.require_sni: not supported`},
		{"a certificate provider instance the bootstrap lacks (C-core: NACK)", func(fc *listenerv3.FilterChain) {
			fc.TransportSocket = serverres.Chain("", nil, serverres.RDSHCM("r"), serverres.TLS("other", "", false)).TransportSocket
		}, at + `transport_socket.typed_config.common_tls_context.tls_certificate_provider_instance.instance_name: "other" is not in the bootstrap's certificate_providers`},
	} {
		for kind, match := range kinds {
			dropped := serverres.Chain("dropped", match(), serverres.RDSHCM("r-dropped"), nil)
			tc.edit(dropped)
			used := serverres.Chain("used", &listenerv3.FilterChainMatch{PrefixRanges: dst(), TransportProtocol: "raw_buffer"}, serverres.RDSHCM("r-used"), nil)
			got, err := serverlistener.Validate(serverres.Listener("s1", "0.0.0.0", 8443, nil, used, dropped), false, known)
			switch {
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("%s, in a chain dropped for %s: error %v, want %q", tc.name, kind, err, tc.want)
			case tc.want == "" && err != nil:
				t.Errorf("%s, in a chain dropped for %s: %v, want the Listener accepted", tc.name, kind, err)
			case tc.want == "" && (len(got.FilterChains) != 1 || got.FilterChains[0].Name != "used"):
				t.Errorf("%s, in a chain dropped for %s: chains %+v, want the used one alone", tc.name, kind, got.FilterChains)
			}
		}
	}
}

// editHCM returns an edit of a chain's HttpConnectionManager.
func editHCM(edit func(h *hcmv3.HttpConnectionManager)) func(fc *listenerv3.FilterChain) {
	return func(fc *listenerv3.FilterChain) {
		h := serverres.RDSHCM("r-dropped")
		edit(h)
		fc.Filters[0].ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: serverres.MustAny(h)}
	}
}
