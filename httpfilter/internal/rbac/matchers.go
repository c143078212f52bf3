package rbac

import (
	"net/netip"

	"github.com/xdslens/xdslens/internal/xdsmatch"
)

// nodeKind says what a node matches.
type nodeKind uint8

const (
	nodeAny           nodeKind = iota + 1
	nodeConst                  // metadata: never, or always when inverted (b)
	nodeAnd                    // every child
	nodeOr                     // one child
	nodeNot                    // not its only child
	nodePath                   // url_path: str of the method, canonical (canonicalPath)
	nodeServerName             // requested_server_name: str of ""
	nodeHeader                 // header
	nodeIP                     // a CIDR range of the server's address (local) or the peer's
	nodePort                   // destination_port
	nodeAuthenticated          // a TLS connection, one of whose principals str matches when named
)

// node is one compiled permission or principal. Nodes are values of one
// concrete type, so that deciding calls no interface method and the
// request stays on its caller's stack.
type node struct {
	kind     nodeKind
	b        bool // nodeConst's result; nodeIP: the server's address; nodeAuthenticated: a principal_name is set
	children []node
	str      xdsmatch.String
	header   *headerMatcher
	prefix   netip.Prefix
	port     uint32
}

func (n *node) match(r *Request) bool {
	switch n.kind {
	case nodeAny:
		return true
	case nodeConst:
		return n.b
	case nodeAnd:
		for i := range n.children {
			if !n.children[i].match(r) {
				return false
			}
		}
		return true
	case nodeOr:
		return matchAny(n.children, r)
	case nodeNot:
		return !n.children[0].match(r)
	case nodePath:
		return r.pathOK && n.str.Match(r.path)
	case nodeServerName:
		return n.str.Match("")
	case nodeHeader:
		return n.header.match(r)
	case nodeIP:
		return n.matchIP(r)
	case nodePort:
		return uint32(r.Local.Port()) == n.port
	case nodeAuthenticated:
		return r.TLS && (!n.b || n.matchPrincipal(r))
	}
	return false
}

// matchAny reports whether one of ns matches.
func matchAny(ns []node, r *Request) bool {
	for i := range ns {
		if ns[i].match(r) {
			return true
		}
	}
	return false
}

func (n *node) matchIP(r *Request) bool {
	a := r.Remote.Addr()
	if n.b {
		a = r.Local.Addr()
	}
	if !a.IsValid() {
		return false
	}
	if n.prefix.Contains(a) {
		return true
	}
	// An IPv4-mapped IPv6 range holds the IPv4 addresses it maps.
	return a.Is4() && n.prefix.Addr().Is4In6() && n.prefix.Contains(netip.AddrFrom16(a.As16()))
}

func (n *node) matchPrincipal(r *Request) bool {
	for _, p := range r.Principals {
		if n.str.Match(p) {
			return true
		}
	}
	return false
}

// headerMatcher is a compiled envoy.config.route.v3.HeaderMatcher and
// the name of the header it reads.
type headerMatcher struct {
	name string
	m    xdsmatch.Header
}

func (h *headerMatcher) match(r *Request) bool { return h.m.Match(r.header(h.name)) }
