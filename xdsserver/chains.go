package xdsserver

import (
	"net/netip"
	"reflect"
	"slices"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/serverlistener"

	"google.golang.org/protobuf/proto"
)

// chainMatcher picks the filter chain of a new connection from one server
// Listener, as Envoy's filter chain matching does (gRFC A36): stage by
// stage, the most specific destination prefix that holds the server's
// address, then the source type (SAME_IP_OR_LOOPBACK or EXTERNAL, when a
// chain of the remaining ones names it, else ANY), the most specific
// source prefix that holds the peer's address, then the peer's port
// (named, else any: no ports, or port 0). A stage that leaves no chain gives the default
// chain; there is no backtracking to a less specific match.
type chainMatcher struct {
	chains []*chain // in the order of the Listener's filter_chains
	def    *chain   // default_filter_chain, nil when unset
}

// match returns the chain of a connection from remote to local, nil when
// none matches and there is no default chain.
func (m *chainMatcher) match(local, remote netip.AddrPort) *chain {
	if c := m.matchChains(local.Addr().Unmap(), remote.Addr().Unmap(), remote.Port()); c != nil {
		return c
	}
	return m.def
}

func (m *chainMatcher) matchChains(local, remote netip.Addr, port uint16) *chain {
	// Destination prefix: the longest that holds local; a chain with no
	// prefix holds every address, less specifically than any prefix.
	cands := mostSpecific(m.chains, func(c *chain) []netip.Prefix { return c.fc.Match.DestinationPrefixes }, local)
	if len(cands) == 0 {
		return nil
	}
	// Source type.
	want := serverlistener.SourceExternal
	if remote.IsLoopback() || remote == local {
		want = serverlistener.SourceSameIPOrLoopback
	}
	typed := slices.DeleteFunc(slices.Clone(cands), func(c *chain) bool { return c.fc.Match.SourceType != want })
	if len(typed) == 0 {
		typed = slices.DeleteFunc(cands, func(c *chain) bool { return c.fc.Match.SourceType != serverlistener.SourceAny })
	}
	// Source prefix.
	cands = mostSpecific(typed, func(c *chain) []netip.Prefix { return c.fc.Match.SourcePrefixes }, remote)
	// Source port: a chain naming it, else one with no ports or with
	// port 0, which stands for any port (Envoy, gRPC C-core and grpc-go
	// key both the same). The Listener's validation leaves at most one of
	// each.
	var anyPort *chain
	for _, c := range cands {
		ports := c.fc.Match.SourcePorts
		if port != 0 && slices.Contains(ports, uint32(port)) {
			return c
		}
		if len(ports) == 0 || slices.Contains(ports, 0) {
			anyPort = c
		}
	}
	return anyPort
}

// mostSpecific returns the chains of cands whose prefixes (a chain with
// none holds every address, less specifically than any prefix) hold a
// with the longest prefix; none when no chain's prefixes hold it.
func mostSpecific(cands []*chain, prefixes func(*chain) []netip.Prefix, a netip.Addr) []*chain {
	best := -2
	var out []*chain
	for _, c := range cands {
		l := longestHolding(prefixes(c), a)
		switch {
		case l > best:
			best, out = l, append(out[:0], c)
		case l == best && l > -2:
			out = append(out, c)
		}
	}
	return out
}

// longestHolding returns the length of the longest of prefixes that holds
// a, -1 when prefixes is empty (it holds every address), and -2 when none
// holds a.
func longestHolding(prefixes []netip.Prefix, a netip.Addr) int {
	if len(prefixes) == 0 {
		return -1
	}
	best := -2
	for _, p := range prefixes {
		if p.Bits() > best && p.Contains(a) {
			best = p.Bits()
		}
	}
	return best
}

// sameChain reports whether a connection on chain a may go on unchanged
// on chain b of a new Listener: everything but the match is equal (the
// name, the route configuration or its name, the HTTP filters and their
// configs, the TLS settings).
func sameChain(a, b *serverlistener.FilterChain) bool {
	x, y := *a, *b
	x.Match, y.Match = serverlistener.FilterChainMatch{}, serverlistener.FilterChainMatch{}
	return deepEqual(reflect.ValueOf(x), reflect.ValueOf(y))
}

var (
	protoMessage = reflect.TypeFor[proto.Message]()
	// netipTypes are compared whole: their unexported fields are not
	// walked.
	netipTypes = []reflect.Type{reflect.TypeFor[netip.Addr](), reflect.TypeFor[netip.Prefix](), reflect.TypeFor[netip.AddrPort]()}
)

// plain reports whether values of t are equal exactly when == says so:
// t holds no pointer, interface, slice or map, only values (netip ones
// included).
func plain(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.String:
		return true
	case reflect.Array:
		return plain(t.Elem())
	case reflect.Struct:
		if slices.Contains(netipTypes, t) {
			return true
		}
		for i := range t.NumField() {
			if !plain(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}

// deepEqual is reflect.DeepEqual for decoded resources, which compares
// the protobuf messages inside them (the configs of HTTP filters and
// overrides) with proto.Equal rather than by their internal state.
func deepEqual(a, b reflect.Value) bool {
	if a.Type() != b.Type() {
		return false
	}
	if a.Type().Implements(protoMessage) {
		return proto.Equal(a.Interface().(proto.Message), b.Interface().(proto.Message))
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return deepEqual(a.Elem(), b.Elem())
	case reflect.Struct:
		if plain(a.Type()) {
			return a.Equal(b)
		}
		for i := range a.NumField() {
			if !deepEqual(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if a.Len() != b.Len() || a.IsNil() != b.IsNil() {
			return false
		}
		for i := range a.Len() {
			if !deepEqual(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() || a.IsNil() != b.IsNil() {
			return false
		}
		for _, k := range a.MapKeys() {
			v := b.MapIndex(k)
			if !v.IsValid() || !deepEqual(a.MapIndex(k), v) {
				return false
			}
		}
		return true
	}
	return a.Equal(b) // bool, numbers, strings

}
