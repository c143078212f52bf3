package xdsserver

import (
	"net/netip"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/serverlistener"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/filterconfig"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"

	"google.golang.org/protobuf/types/known/anypb"
)

// mkChain is a chain named name with match m.
func mkChain(name string, m serverlistener.FilterChainMatch) *chain {
	return &chain{fc: &serverlistener.FilterChain{Name: name, Match: m}}
}

func prefixes(ps ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range ps {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}

// Rows read as gRFC A36 (Envoy's filter chain matching) says: each stage
// keeps the most specific chains, and a stage that keeps none gives the
// default chain.
func TestChainMatching(t *testing.T) {
	def := mkChain("default", serverlistener.FilterChainMatch{})
	m := &chainMatcher{def: def, chains: []*chain{
		mkChain("any", serverlistener.FilterChainMatch{}),
		mkChain("dst-10/8", serverlistener.FilterChainMatch{DestinationPrefixes: prefixes("10.0.0.0/8")}),
		mkChain("dst-10.1/16", serverlistener.FilterChainMatch{DestinationPrefixes: prefixes("10.1.0.0/16", "192.168.0.0/16")}),
		mkChain("dst-10.1/16-src-172/8", serverlistener.FilterChainMatch{DestinationPrefixes: prefixes("10.1.0.0/16"), SourcePrefixes: prefixes("172.0.0.0/8")}),
		mkChain("dst-10.1/16-src-172.16/12", serverlistener.FilterChainMatch{DestinationPrefixes: prefixes("10.1.0.0/16"), SourcePrefixes: prefixes("172.16.0.0/12")}),
		mkChain("dst-10.1/16-src-172.16/12-port", serverlistener.FilterChainMatch{DestinationPrefixes: prefixes("10.1.0.0/16"), SourcePrefixes: prefixes("172.16.0.0/12"), SourcePorts: []uint32{5000, 5001}}),
		mkChain("dst-10.2/16-external", serverlistener.FilterChainMatch{DestinationPrefixes: prefixes("10.2.0.0/16"), SourceType: serverlistener.SourceExternal}),
		mkChain("dst-10.3/16-local", serverlistener.FilterChainMatch{DestinationPrefixes: prefixes("10.3.0.0/16"), SourceType: serverlistener.SourceSameIPOrLoopback}),
		mkChain("dst-10.3/16-any-src-9/8", serverlistener.FilterChainMatch{DestinationPrefixes: prefixes("10.3.0.0/16"), SourcePrefixes: prefixes("9.0.0.0/8")}),
		mkChain("dst-10.4/16-src-only-5/8", serverlistener.FilterChainMatch{DestinationPrefixes: prefixes("10.4.0.0/16"), SourcePrefixes: prefixes("5.0.0.0/8")}),
		mkChain("dst-v6", serverlistener.FilterChainMatch{DestinationPrefixes: prefixes("2001:db8::/32")}),
		mkChain("dst-10.5/16-port-0", serverlistener.FilterChainMatch{DestinationPrefixes: prefixes("10.5.0.0/16"), SourcePorts: []uint32{0}}),
		mkChain("dst-10.5/16-port-6000", serverlistener.FilterChainMatch{DestinationPrefixes: prefixes("10.5.0.0/16"), SourcePorts: []uint32{6000}}),
	}}
	tests := []struct {
		local, remote string
		want          string
	}{
		{"192.0.2.1:443", "198.51.100.1:5000", "any"},                                           // no prefix holds it but the chain without one
		{"10.9.9.9:443", "198.51.100.1:5000", "dst-10/8"},                                       // the only holding prefix
		{"10.1.2.3:443", "198.51.100.1:5000", "dst-10.1/16"},                                    // longest destination prefix, then no source prefix
		{"192.168.1.1:443", "198.51.100.1:5000", "dst-10.1/16"},                                 // any of a chain's prefixes
		{"10.1.2.3:443", "172.1.1.1:5000", "dst-10.1/16-src-172/8"},                             // longest source prefix
		{"10.1.2.3:443", "172.16.1.1:6000", "dst-10.1/16-src-172.16/12"},                        // more specific source prefix, any port
		{"10.1.2.3:443", "172.16.1.1:5001", "dst-10.1/16-src-172.16/12-port"},                   // the named port wins
		{"10.2.0.1:443", "198.51.100.1:5000", "dst-10.2/16-external"},                           // EXTERNAL peer
		{"10.2.0.1:443", "127.0.0.1:5000", "default"},                                           // loopback: no SAME_IP_OR_LOOPBACK chain and no ANY one at 10.2/16
		{"10.2.0.1:443", "10.2.0.1:5000", "default"},                                            // the same IP counts as local
		{"10.3.0.1:443", "127.0.0.1:5000", "dst-10.3/16-local"},                                 // loopback
		{"10.3.0.1:443", "9.1.1.1:5000", "dst-10.3/16-any-src-9/8"},                             // external peer: the ANY chain
		{"10.3.0.1:443", "8.1.1.1:5000", "default"},                                             // ANY chain's source prefix does not hold it
		{"10.4.0.1:443", "6.1.1.1:5000", "default"},                                             // no backtracking to a shorter destination prefix
		{"[::ffff:10.1.2.3]:443", "[::ffff:172.16.1.1]:5000", "dst-10.1/16-src-172.16/12-port"}, // IPv4-mapped addresses are IPv4
		{"[2001:db8::1]:443", "[2001:db8::2]:5000", "dst-v6"},
		{"[2001:db9::1]:443", "[2001:db8::2]:5000", "any"},
		{"10.5.0.1:443", "198.51.100.1:6000", "dst-10.5/16-port-6000"}, // the named port
		{"10.5.0.1:443", "198.51.100.1:5000", "dst-10.5/16-port-0"},    // source_ports [0] stands for any port
		{"10.3.0.1:443", "127.0.0.2:5000", "dst-10.3/16-local"},        // all of 127.0.0.0/8 is loopback (Envoy, grpc-go; C-core: 127.0.0.1 alone)
	}
	for _, tc := range tests {
		got := m.match(netip.MustParseAddrPort(tc.local), netip.MustParseAddrPort(tc.remote))
		if got == nil || got.fc.Name != tc.want {
			name := "<nil>"
			if got != nil {
				name = got.fc.Name
			}
			t.Errorf("%s <- %s: chain %q, want %q", tc.local, tc.remote, name, tc.want)
		}
	}
	// Without a default chain, no match is nil.
	m.def = nil
	if got := m.match(netip.MustParseAddrPort("10.4.0.1:443"), netip.MustParseAddrPort("6.1.1.1:5000")); got != nil {
		t.Errorf("no match and no default chain: %q, want nil", got.fc.Name)
	}
}

func TestSameChain(t *testing.T) {
	base := serverlistener.FilterChain{
		Name:            "c",
		Match:           serverlistener.FilterChainMatch{SourcePorts: []uint32{1}},
		RouteConfigName: "r",
		HTTPFilters:     []filterconfig.Filter{{Name: "f", TypeURL: "t", Config: &anypb.Any{TypeUrl: "t", Value: []byte{1}}}},
		Security:        &security.Config{IdentityInstance: "a"},
	}
	same := base
	same.Match = serverlistener.FilterChainMatch{DestinationPrefixes: prefixes("10.0.0.0/8")}
	same.Security = &security.Config{IdentityInstance: "a"}
	same.HTTPFilters = []filterconfig.Filter{{Name: "f", TypeURL: "t", Config: &anypb.Any{TypeUrl: "t", Value: []byte{1}}}}
	if !sameChain(&base, &same) {
		t.Error("chains differing only in their match and pointers are not the same")
	}
	for _, change := range []func(c *serverlistener.FilterChain){
		func(c *serverlistener.FilterChain) { c.Name = "d" },
		func(c *serverlistener.FilterChain) { c.RouteConfigName = "r2" },
		func(c *serverlistener.FilterChain) { c.Security = nil },
		func(c *serverlistener.FilterChain) {
			c.Security = &security.Config{IdentityInstance: "a", RequireClientCert: true}
		},
		func(c *serverlistener.FilterChain) {
			c.HTTPFilters = []filterconfig.Filter{{Name: "f", TypeURL: "t", Config: &anypb.Any{TypeUrl: "t", Value: []byte{2}}}}
		},
		func(c *serverlistener.FilterChain) {
			c.InlineRouteConfig = &routeconfig.Config{Name: "inline"}
		},
	} {
		other := base
		change(&other)
		if sameChain(&base, &other) {
			t.Errorf("a changed chain %+v is the same as %+v", other, base)
		}
	}
}
