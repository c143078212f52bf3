package serverlistener_test

import (
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
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
