// Package serverlistener validates the Listeners of xDS-enabled servers
// (gRFC A36): a Listener without api_listener, its address and its
// filter chains, each matched by destination and source prefixes, source
// type and ports, with the HttpConnectionManager that routes it and the
// DownstreamTlsContext that secures it (gRFC A29). Its rules are rows of
// the table in package xdsresource.
package serverlistener

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/filterconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/internal/decoding"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"
)

// Listener is a validated server-side Listener (gRFC A36): the
// address an xDS-enabled gRPC server listens on and the filter chains that
// say, per connection, which routes, HTTP filters and TLS settings apply.
type Listener struct {
	// Address is address.socket_address.address, the IP address (or
	// host) the server listens on.
	Address string
	// Port is address.socket_address.port_value.
	Port uint32
	// FilterChains are the filter chains that gRPC uses, in order. Chains
	// that gRPC drops because their filter_chain_match uses a field it
	// does not support (destination_port, server_names,
	// application_protocols, a transport_protocol other than "raw_buffer")
	// are left out, once validated as the others are, and so are chains
	// with no transport_protocol for destination prefixes where a chain
	// with "raw_buffer" exists: such a chain keeps only its other prefixes
	// in Match.DestinationPrefixes, or is left out when none remain. No
	// two chains match the same connection.
	FilterChains []FilterChain
	// DefaultFilterChain is default_filter_chain, nil when unset: it
	// serves the connections that no chain of FilterChains matches. Its
	// filter_chain_match is validated as any chain's, and not used. At
	// least one of FilterChains and DefaultFilterChain is not empty.
	DefaultFilterChain *FilterChain
}

// FilterChain is one validated filter chain of a server-side Listener. Its
// only network filter is an HttpConnectionManager: exactly one of
// RouteConfigName and InlineRouteConfig is set.
type FilterChain struct {
	// Name is the chain's name, which may be empty.
	Name string
	// Match says which connections the chain serves; it is the zero value
	// for the default filter chain.
	Match FilterChainMatch
	// RouteConfigName is the RouteConfiguration to fetch with RDS.
	RouteConfigName string
	// InlineRouteConfig is the route_config carried inline.
	InlineRouteConfig *routeconfig.Config
	// HTTPFilters are the server-side HTTP filters in order, the router
	// last.
	HTTPFilters []filterconfig.Filter
	// Security is the validated DownstreamTlsContext of transport_socket
	// (gRFC A29), nil when the chain serves plaintext connections.
	Security *security.Config
}

// SourceType is filter_chain_match.source_type.
type SourceType int

// Source types, with the values of the proto enum.
const (
	// SourceAny matches every connection.
	SourceAny SourceType = iota
	// SourceSameIPOrLoopback matches connections from the local host.
	SourceSameIPOrLoopback
	// SourceExternal matches connections from other hosts.
	SourceExternal
)

// String returns the proto name of t, such as "SAME_IP_OR_LOOPBACK".
func (t SourceType) String() string {
	return listenerv3.FilterChainMatch_ConnectionSourceType(t).String()
}

// FilterChainMatch is the part of filter_chain_match that gRPC uses. Empty
// lists match everything.
type FilterChainMatch struct {
	// DestinationPrefixes are prefix_ranges, masked; an IPv4-mapped IPv6
	// range of at least 96 bits is given as the IPv4 range it holds.
	DestinationPrefixes []netip.Prefix
	// TransportProtocol is "" or "raw_buffer".
	TransportProtocol string
	// SourceType is source_type.
	SourceType SourceType
	// SourcePrefixes are source_prefix_ranges, normalised as
	// DestinationPrefixes.
	SourcePrefixes []netip.Prefix
	// SourcePorts are source_ports.
	SourcePorts []uint32
}

// Summary describes s, the server Listener named name, in one line, for
// example `server listener s1: 0.0.0.0:8443, 2 filter chains and a
// default`.
func (s *Listener) Summary(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "server listener %s: %s, %s", name,
		net.JoinHostPort(s.Address, strconv.Itoa(int(s.Port))),
		decoding.Plural(len(s.FilterChains), "filter chain", "filter chains"))
	if s.DefaultFilterChain != nil {
		b.WriteString(" and a default")
	}
	return b.String()
}

// Validate validates m, a Listener without api_listener, from a trusted
// server (gRFC A81) or not; hasProvider reports whether the bootstrap has
// a certificate provider instance of that name (nil knows none). Errors
// start with the field path inside the Listener.
func Validate(m *listenerv3.Listener, trustedServer bool, hasProvider func(instance string) bool) (*Listener, error) {
	opts := options{trustedServer: trustedServer, hasProvider: hasProvider}
	if n := len(m.GetListenerFilters()); n != 0 {
		return nil, fmt.Errorf("listener_filters: not supported (%s)", decoding.Plural(n, "entry", "entries"))
	}
	if m.GetUseOriginalDst().GetValue() {
		return nil, errors.New("use_original_dst: true is not supported")
	}
	if m.GetAddress() == nil {
		return nil, errors.New("address: missing, a listener without api_listener is a server listener and needs one")
	}
	sa := m.GetAddress().GetSocketAddress()
	if sa == nil {
		return nil, errors.New("address.socket_address: missing")
	}
	s := &Listener{Address: sa.GetAddress(), Port: sa.GetPortValue()}
	if dfc := m.GetDefaultFilterChain(); dfc != nil {
		fc, err := validateFilterChain(opts, dfc)
		if err != nil {
			return nil, fmt.Errorf("default_filter_chain.%v", err)
		}
		fc.Match = FilterChainMatch{} // validated, and ignored
		s.DefaultFilterChain = fc
	}
	chains, err := validateFilterChains(opts, m.GetFilterChains())
	if err != nil {
		return nil, err
	}
	s.FilterChains = chains
	if len(s.FilterChains) == 0 && s.DefaultFilterChain == nil {
		return nil, errors.New("filter_chains: none that gRPC supports, and no default_filter_chain")
	}
	return s, nil
}

// options are what Validate was told of where the Listener came from.
type options struct {
	trustedServer bool
	hasProvider   func(instance string) bool
}

// matchKey is one combination of the filter_chain_match fields that gRPC
// looks a connection up by. Two chains with the same key overlap.
type matchKey struct {
	dst, src netip.Prefix // the zero Prefix when the chain has none
	srcType  SourceType
	port     uint32 // 0 when the chain has no source_ports
}

// dstState is what validateFilterChains knows about one destination prefix.
type dstState struct {
	rawBuffer bool             // a chain with transport_protocol raw_buffer was seen
	owners    map[matchKey]int // index of the chain that holds each key
}

// validateFilterChains validates filter_chains and returns the chains that
// gRPC uses. As in gRPC C-core, every chain is validated whole first,
// those that gRPC then drops included; then the chains that gRPC cannot
// serve are dropped (destination_port, server_names, a transport_protocol
// other than "raw_buffer", application_protocols, or chains without
// transport_protocol where a "raw_buffer" one takes their destination),
// and only the chains left are checked for overlaps and for their
// source_type.
func validateFilterChains(opts options, chains []*listenerv3.FilterChain) ([]FilterChain, error) {
	parsed := make([]*FilterChain, len(chains))
	for i, fc := range chains {
		c, err := validateFilterChain(opts, fc)
		if err != nil {
			return nil, fmt.Errorf("filter_chains[%d].%v", i, err)
		}
		parsed[i] = c
	}
	byDst := make(map[netip.Prefix]*dstState)
	for i, fc := range chains {
		at := fmt.Sprintf("filter_chains[%d].filter_chain_match", i)
		m := fc.GetFilterChainMatch()
		if m.GetDestinationPort().GetValue() != 0 {
			continue // gRPC drops chains that match on destination_port
		}
		if len(m.GetServerNames()) != 0 {
			continue // server_names are not supported: the chain is dropped
		}
		tp := m.GetTransportProtocol()
		if tp != "" && tp != "raw_buffer" {
			continue
		}
		c := parsed[i]
		dsts := c.Match.DestinationPrefixes
		if len(dsts) == 0 {
			dsts = []netip.Prefix{{}}
		}
		live := make([]bool, len(dsts)) // whether dsts[k] takes the chain
		anyLive := false
		for k, d := range dsts {
			st := byDst[d]
			if st == nil {
				st = &dstState{owners: make(map[matchKey]int)}
				byDst[d] = st
			}
			switch {
			case tp == "" && st.rawBuffer:
				continue // a raw_buffer chain takes precedence here
			case tp != "" && !st.rawBuffer:
				st.rawBuffer = true
				clear(st.owners) // chains without transport_protocol no longer apply here
			}
			live[k], anyLive = true, true
		}
		if len(m.GetApplicationProtocols()) != 0 || !anyLive {
			continue // application_protocols are not supported: dropped
		}
		srcType := SourceType(m.GetSourceType())
		if srcType < SourceAny || srcType > SourceExternal {
			return nil, fmt.Errorf("%s.source_type: %v is not supported", at, m.GetSourceType())
		}
		c.Match.SourceType = srcType
		srcs := c.Match.SourcePrefixes
		if len(srcs) == 0 {
			srcs = []netip.Prefix{{}}
		}
		ports := m.GetSourcePorts()
		if len(ports) == 0 {
			ports = []uint32{0}
		}
		for k, d := range dsts {
			if !live[k] {
				continue
			}
			owners := byDst[d].owners
			for _, src := range srcs {
				for _, p := range ports {
					key := matchKey{dst: d, src: src, srcType: srcType, port: p}
					if j, ok := owners[key]; ok {
						if j == i {
							return nil, fmt.Errorf("%s: lists the same match twice", at)
						}
						return nil, fmt.Errorf("%s: overlaps filter_chains[%d]", at, j)
					}
					owners[key] = i
				}
			}
		}
	}
	// A chain is used when it still holds a match; a chain replaced by a
	// raw_buffer chain for some of its destination prefixes keeps the
	// others.
	live := make(map[int]map[netip.Prefix]bool)
	for d, st := range byDst {
		for _, i := range st.owners {
			if live[i] == nil {
				live[i] = make(map[netip.Prefix]bool)
			}
			live[i][d] = true
		}
	}
	var out []FilterChain
	for i := range chains {
		if live[i] == nil {
			continue
		}
		c := parsed[i]
		if c.Match.DestinationPrefixes != nil {
			c.Match.DestinationPrefixes = slices.DeleteFunc(c.Match.DestinationPrefixes, func(p netip.Prefix) bool { return !live[i][p] })
		}
		out = append(out, *c)
	}
	return out, nil
}

// parsePrefixes parses CIDR ranges: the address must be an IP address, the
// length at most its size in bits (128 for an IPv4-mapped IPv6 address);
// the result is masked. An IPv4-mapped range of at least 96 bits is the
// IPv4 range it holds (::ffff:10.0.0.0/104 is 10.0.0.0/8), as connections
// from IPv4 peers are matched by their IPv4 address; a shorter one is the
// IPv6 range it is, which holds no IPv4 address. Errors start with
// "[i]: ".
func parsePrefixes(ranges []*corev3.CidrRange) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for i, r := range ranges {
		addr, err := netip.ParseAddr(r.GetAddressPrefix())
		if err != nil {
			return nil, fmt.Errorf("[%d].address_prefix: %q is not an IP address", i, r.GetAddressPrefix())
		}
		bits := r.GetPrefixLen().GetValue()
		if bits > uint32(addr.BitLen()) {
			return nil, fmt.Errorf("[%d].prefix_len: %d is longer than the %d bits of %q", i, bits, addr.BitLen(), r.GetAddressPrefix())
		}
		p := netip.PrefixFrom(addr, int(bits)).Masked()
		if addr.Is4In6() && bits >= 96 {
			p = netip.PrefixFrom(addr.Unmap(), int(bits)-96).Masked()
		}
		out = append(out, p)
	}
	return out, nil
}

// validateFilterChain validates one chain, whether gRPC uses it or not (as
// gRPC C-core does): first the secrets its transport socket may carry
// (security.CheckSocketSecrets), then the CIDR ranges of its match, its
// filters and its transport socket. The match's source_type is checked
// only in the chains that gRPC uses (validateFilterChains). Errors start
// with the field inside the chain.
func validateFilterChain(opts options, fc *listenerv3.FilterChain) (*FilterChain, error) {
	if err := security.CheckSocketSecrets(fc.GetTransportSocket()); err != nil {
		return nil, fmt.Errorf("transport_socket.%v", err)
	}
	m := fc.GetFilterChainMatch()
	dsts, err := parsePrefixes(m.GetPrefixRanges())
	if err != nil {
		return nil, fmt.Errorf("filter_chain_match.prefix_ranges%v", err)
	}
	srcs, err := parsePrefixes(m.GetSourcePrefixRanges())
	if err != nil {
		return nil, fmt.Errorf("filter_chain_match.source_prefix_ranges%v", err)
	}
	filters := fc.GetFilters()
	if n := len(filters); n != 1 {
		return nil, fmt.Errorf("filters: has %s, want exactly one, the HttpConnectionManager", decoding.Plural(n, "filter", "filters"))
	}
	// The filter's name is not read, as in C-core.
	f := filters[0]
	cfg := f.GetTypedConfig()
	if cfg == nil {
		return nil, fmt.Errorf("filters[0] %q: typed_config missing", f.GetName())
	}
	if cfg.GetTypeUrl() != routeconfig.ConnectionManagerTypeURL {
		return nil, fmt.Errorf("filters[0] %q: network filter type %q is not supported, want %q", f.GetName(), cfg.GetTypeUrl(), routeconfig.ConnectionManagerTypeURL)
	}
	hcm := new(hcmv3.HttpConnectionManager)
	if err := decoding.Unmarshal(cfg.GetValue(), hcm); err != nil {
		return nil, fmt.Errorf("filters[0] %q: %v", f.GetName(), err)
	}
	c, err := routeconfig.ValidateConnectionManager(hcm, true, opts.trustedServer)
	if err != nil {
		return nil, fmt.Errorf("filters[0] %q: %v", f.GetName(), err)
	}
	sec, err := security.Downstream(fc.GetTransportSocket(), opts.hasProvider)
	if err != nil {
		return nil, fmt.Errorf("transport_socket.%v", err)
	}
	return &FilterChain{
		Name: fc.GetName(),
		Match: FilterChainMatch{
			DestinationPrefixes: dsts,
			TransportProtocol:   m.GetTransportProtocol(),
			SourcePrefixes:      srcs,
			SourcePorts:         m.GetSourcePorts(),
		},
		RouteConfigName:   c.RouteConfigName,
		InlineRouteConfig: c.InlineRouteConfig,
		HTTPFilters:       c.HTTPFilters,
		Security:          sec,
	}, nil
}
