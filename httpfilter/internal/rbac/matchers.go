package rbac

import (
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"github.com/xdslens/xdslens/internal/asciifold"
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
	str      stringMatcher
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
		return r.pathOK && n.str.matches(r.path)
	case nodeServerName:
		return n.str.matches("")
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
		if n.str.matches(p) {
			return true
		}
	}
	return false
}

// stringKind says how a stringMatcher compares.
type stringKind uint8

const (
	stringExact stringKind = iota + 1
	stringPrefix
	stringSuffix
	stringContains
	stringRegex
)

// stringMatcher is a compiled envoy.type.matcher.v3.StringMatcher.
type stringMatcher struct {
	kind  stringKind
	value string // lower-cased when fold
	fold  bool
	re    *regexp.Regexp
}

func (s *stringMatcher) matches(v string) bool {
	switch s.kind {
	case stringExact:
		if s.fold {
			return asciifold.Equal(v, s.value)
		}
		return v == s.value
	case stringPrefix:
		if s.fold {
			return asciifold.HasPrefix(v, s.value)
		}
		return strings.HasPrefix(v, s.value)
	case stringSuffix:
		if s.fold {
			return asciifold.HasSuffix(v, s.value)
		}
		return strings.HasSuffix(v, s.value)
	case stringContains:
		if s.fold {
			return asciifold.Contains(v, s.value)
		}
		return strings.Contains(v, s.value)
	case stringRegex:
		return s.re.MatchString(v)
	}
	return false
}

// headerMatcher is a compiled envoy.config.route.v3.HeaderMatcher.
type headerMatcher struct {
	name string
	// present is set for present_match; str for the string kinds; a range
	// match is [start, end).
	isPresent  bool
	present    bool
	isRange    bool
	start, end int64
	str        stringMatcher
	invert     bool
}

func (h *headerMatcher) match(r *Request) bool {
	v, ok := r.header(h.name)
	var m bool
	switch {
	case h.isPresent:
		m = ok == h.present
	case !ok:
		return false // every other matcher fails on an absent header, inverted or not
	case h.isRange:
		n, err := strconv.ParseInt(v, 10, 64)
		m = err == nil && n >= h.start && n < h.end
	default:
		m = h.str.matches(v)
	}
	return m != h.invert
}
