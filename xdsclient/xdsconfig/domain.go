package xdsconfig

import (
	"strings"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"
)

// matchKind ranks domain patterns, most specific first.
type matchKind int

const (
	matchExact matchKind = iota
	matchSuffix
	matchPrefix
	matchAny
	matchInvalid
)

// kindOf says how pattern matches. As in gRPC C-core and grpc-go, only its
// first or last character is a wildcard; any other "*" stands for itself.
func kindOf(pattern string) matchKind {
	switch {
	case pattern == "":
		return matchInvalid
	case !strings.Contains(pattern, "*"):
		return matchExact
	case pattern == "*":
		return matchAny
	case pattern[0] == '*':
		return matchSuffix
	case pattern[len(pattern)-1] == '*':
		return matchPrefix
	}
	return matchInvalid
}

// MatchDomain reports whether host matches the virtual-host domain pattern
// pattern as gRFC A27 (and Envoy) define it: an exact name, a suffix
// wildcard "*.foo.com", a prefix wildcard "foo.*", or "*", which matches
// every host. The wildcard stands for at least one character, and the
// comparison ignores ASCII case. Only the first or last character of a
// pattern is a wildcard (the first when both are "*"): "**" matches the
// hosts that end in "*". An invalid pattern (empty, or with a "*" only
// elsewhere than at its ends) matches nothing.
func MatchDomain(pattern, host string) bool {
	return matches(kindOf(pattern), pattern, host)
}

func matches(k matchKind, pattern, host string) bool {
	switch k {
	case matchExact:
		return foldEqual(pattern, host)
	case matchSuffix:
		return len(host) >= len(pattern) && foldEqual(pattern[1:], host[len(host)-len(pattern)+1:])
	case matchPrefix:
		return len(host) >= len(pattern) && foldEqual(pattern[:len(pattern)-1], host[:len(pattern)-1])
	case matchAny:
		return true
	}
	return false
}

// foldEqual reports whether a and b are equal ignoring ASCII case, the
// case folding of host names (Unicode folding would make the Kelvin sign
// match "k").
func foldEqual(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// FindVirtualHost returns the index in vhosts of the virtual host for
// authority, or -1 if none of their domains matches it (gRFC A27). The most
// specific match wins: an exact domain, then the longest suffix wildcard,
// then the longest prefix wildcard, then "*"; between equally specific
// matches, the first virtual host in the list wins, as in gRPC C-core.
func FindVirtualHost(vhosts []routeconfig.VirtualHost, authority string) int {
	best, bestKind, bestLen := -1, matchInvalid, 0
	for i := range vhosts {
		for _, p := range vhosts[i].Domains {
			k := kindOf(p)
			if k > bestKind || (k == bestKind && len(p) <= bestLen) {
				continue
			}
			if !matches(k, p, authority) {
				continue
			}
			best, bestKind, bestLen = i, k, len(p)
			if k == matchExact {
				return best
			}
		}
	}
	return best
}
