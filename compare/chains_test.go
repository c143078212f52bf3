package compare_test

import (
	"net"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/serverres"
)

// servingChain is a plaintext chain named name matching m whose routes
// serve the methods starting with prefix alone.
func servingChain(name string, m *listenerv3.FilterChainMatch, prefix string) *listenerv3.FilterChain {
	return serverres.Chain(name, m, serverres.InlineHCM(serverres.Routes(name+"-routes", serverres.Serve(prefix))), nil)
}

// chainsListener serves chains, and no default chain, on each server's
// address.
func chainsListener(t *testing.T, chains ...*listenerv3.FilterChain) listenerFunc {
	return func(_ int, name, addr string) *listenerv3.Listener {
		host, port := servertest.HostPort(t, addr)
		return serverres.Listener(name, host, port, nil, chains...)
	}
}

func cidrs(addr string, bits uint32) []*corev3.CidrRange {
	return []*corev3.CidrRange{serverres.CIDR(addr, bits)}
}

// Each connection is served by the chain that matches it by source, the
// most specific winning (source type, then prefix, then port), else the
// default chain, else none: both servers pick the same chains.
func TestSideBySideFilterChainsBySource(t *testing.T) {
	t.Parallel()
	p := newServedPair(t, servertest.Options{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := uint32(lis.Addr().(*net.TCPAddr).Port) // a source port for 127.0.0.3
	lis.Close()
	chains := func(def bool) listenerFunc {
		return func(_ int, name, addr string) *listenerv3.Listener {
			host, lport := servertest.HostPort(t, addr)
			var d *listenerv3.FilterChain
			if def {
				d = servingChain("default", nil, healthCheck)
			}
			return serverres.Listener(name, host, lport, d,
				servingChain("from-2", &listenerv3.FilterChainMatch{SourcePrefixRanges: cidrs("127.0.0.2", 32)}, emptyCall),
				servingChain("from-24", &listenerv3.FilterChainMatch{SourcePrefixRanges: cidrs("127.0.0.0", 24)}, unaryCall),
				servingChain("from-3-port", &listenerv3.FilterChainMatch{SourcePrefixRanges: cidrs("127.0.0.3", 32), SourcePorts: []uint32{port}}, "/"),
				// A loopback peer is never EXTERNAL.
				servingChain("external-4", &listenerv3.FilterChainMatch{SourcePrefixRanges: cidrs("127.0.0.4", 32), SourceType: listenerv3.FilterChainMatch_EXTERNAL}, "/"),
			)
		}
	}
	froms := []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.1.1"}
	for _, withDefault := range []bool{true, false} {
		p.set(chains(withDefault))
		p.waitModes(t, "SERVING", xdstest.Timeout)
		p.eventually(t, "OK", plaintext, unaryCall)
		for _, from := range froms {
			for _, m := range []string{emptyCall, unaryCall, healthCheck} {
				p.both(t, plaintext, from, m)
			}
		}
	}
	// Selected outcomes, without the default chain.
	for _, c := range []struct{ from, method, want string }{
		{"127.0.0.2", emptyCall, "OK"},            // from-2, more specific than from-24
		{"127.0.0.2", unaryCall, "Unavailable"},   // not routed by from-2
		{"127.0.0.1", unaryCall, "OK"},            // from-24
		{"127.0.0.3", unaryCall, "Unavailable"},   // 127.0.0.3/32 wins, its port does not match: no backtracking to from-24
		{"127.0.0.4", unaryCall, "OK"},            // not EXTERNAL: the ANY chains, of which from-24 holds it
		{"127.0.1.1", healthCheck, "Unavailable"}, // no chain, no default
	} {
		if got := p.both(t, plaintext, c.from, c.method); got != c.want {
			t.Errorf("%s from %s: both %s, want %s", c.method, c.from, got, c.want)
		}
	}
}

// A deliberate difference: destination prefixes. xdslens keeps the chains
// whose destination prefix holds the connection's local address most
// specifically before it looks at sources, as Envoy and gRPC C-core do
// (and gRFC A36 asks); grpc-go considers destination prefixes only when
// the server listens on a wildcard address, so on a loopback address it
// picks by source alone.
func TestSideBySideFilterChainsByDestination(t *testing.T) {
	t.Parallel()
	p := newServedPair(t, servertest.Options{})
	p.set(chainsListener(t,
		servingChain("to-1", &listenerv3.FilterChainMatch{PrefixRanges: cidrs("127.0.0.1", 32)}, unaryCall),
		servingChain("from-2", &listenerv3.FilterChainMatch{SourcePrefixRanges: cidrs("127.0.0.2", 32)}, emptyCall),
	))
	p.waitModes(t, "SERVING", xdstest.Timeout)
	p.eventually(t, "OK", plaintext, unaryCall)
	if got := p.call(t, ours, plaintext, "127.0.0.2", emptyCall); got != "Unavailable" {
		t.Errorf("xdslens: EmptyCall from 127.0.0.2: %s, want Unavailable (chain to-1, the destination's)", got)
	}
	if got := p.call(t, ours, plaintext, "127.0.0.2", unaryCall); got != "OK" {
		t.Errorf("xdslens: UnaryCall from 127.0.0.2: %s, want OK (chain to-1)", got)
	}
	if got := p.call(t, theirs, plaintext, "127.0.0.2", emptyCall); got != "OK" {
		t.Errorf("grpc-go: EmptyCall from 127.0.0.2: %s, want OK (chain from-2; if grpc-go now matches destinations, this difference is gone)", got)
	}
}

// source_ports listing 0 stands for any port on both servers (as in
// Envoy and gRPC C-core), and the chain that names the connection's port
// wins over it.
func TestSideBySideSourcePortZero(t *testing.T) {
	t.Parallel()
	p := newServedPair(t, servertest.Options{})
	p.set(chainsListener(t,
		servingChain("from-5-any-port", &listenerv3.FilterChainMatch{SourcePrefixRanges: cidrs("127.0.0.5", 32), SourcePorts: []uint32{0}}, emptyCall),
		servingChain("from-1", &listenerv3.FilterChainMatch{SourcePrefixRanges: cidrs("127.0.0.1", 32)}, "/"),
	))
	p.waitModes(t, "SERVING", xdstest.Timeout)
	p.eventually(t, "OK", plaintext, unaryCall)
	for _, c := range []struct{ method, want string }{{emptyCall, "OK"}, {unaryCall, "Unavailable"}} {
		if got := p.both(t, plaintext, "127.0.0.5", c.method); got != c.want {
			t.Errorf("%s from 127.0.0.5: both %s, want %s (chain from-5-any-port)", c.method, got, c.want)
		}
	}
}

// A deliberate difference: IPv4-mapped source ranges. xdslens reads one
// with its 128-bit length, as its RBAC does: ::ffff:127.0.0.6/128 holds
// 127.0.0.6, and ::ffff:127.0.0.6/8 is ::/8, which holds no IPv4 peer.
// grpc-go unmaps the address and keeps the length: it rejects the first
// Listener (128 bits for an IPv4 address), and reads the second range as
// 127.0.0.0/8. (gRPC C-core compares address families: neither range
// holds an IPv4 peer there.)
func TestSideBySideMappedSourcePrefixes(t *testing.T) {
	t.Parallel()
	p := newServedPair(t, servertest.Options{})
	mapped := func(bits uint32, chainName string) listenerFunc {
		return chainsListener(t, servingChain(chainName, &listenerv3.FilterChainMatch{SourcePrefixRanges: cidrs("::ffff:127.0.0.6", bits)}, "/"))
	}
	p.set(mapped(128, "from-6"))
	p.waitMode(t, ours, "SERVING")
	p.waitMode(t, theirs, "NOT_SERVING")
	for side, want := range []string{"OK", "Unavailable"} {
		if got := p.call(t, side, plaintext, "127.0.0.6", emptyCall); got != want {
			t.Errorf("%s: from 127.0.0.6 under ::ffff:127.0.0.6/128: %s, want %s", sideNames[side], got, want)
		}
	}
	used := p.listenersUsed()
	p.set(mapped(8, "from-mapped-8"))
	p.waitMode(t, theirs, "SERVING")
	p.waitListeners(t, used+1)
	for side, want := range []string{"Unavailable", "OK"} {
		if got := p.call(t, side, plaintext, "127.0.0.1", emptyCall); got != want {
			t.Errorf("%s: from 127.0.0.1 under ::ffff:127.0.0.6/8: %s, want %s", sideNames[side], got, want)
		}
	}
}

// TestSideBySideUnnamedNetworkFilter: the name of a filter chain's network
// filter is not read, as in gRPC C-core (FilterChainParse reads only its
// typed_config): xdslens serves a chain whose HttpConnectionManager has no
// name, where grpc-go rejects the Listener. A deliberate difference,
// asserted.
func TestSideBySideUnnamedNetworkFilter(t *testing.T) {
	t.Parallel()
	p := newServedPair(t, servertest.Options{})
	unnamed := servingChain("unnamed", nil, "/")
	unnamed.Filters[0].Name = ""
	p.set(chainsListener(t, unnamed))
	p.waitEachMode(t, [2]string{"SERVING", "NOT_SERVING"}, xdstest.Timeout)
	if got := p.call(t, ours, plaintext, "", emptyCall); got != "OK" {
		t.Errorf("xdslens under a chain whose network filter has no name: %s, want OK", got)
	}
	p.mu.Lock()
	why := p.why[theirs]
	p.mu.Unlock()
	if !strings.Contains(why, "name") {
		t.Errorf("grpc-go's reason for NOT_SERVING %q, want one about the filter's name (if grpc-go now accepts it, this difference is gone)", why)
	}
}
