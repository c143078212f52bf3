// Package xdstp parses, canonicalises and builds xdstp:// resource names
// (xRFC TP1, gRFC A47). It is the one place where the client, the bootstrap
// and the resource decoders take such names apart, so that they agree on
// what a name means.
//
// A name that starts with "xdstp:" is a new-style name and must have the
// form
//
//	xdstp://AUTHORITY/TYPE/ID[?CONTEXT_PARAMETERS][#DIRECTIVES]
//
// Every other string is an old-style name, used as it is. The canonical form
// of a new-style name has its authority, path and context parameters
// percent-decoded and encoded again in one way (upper-case hex, only the
// bytes RFC 3986 does not allow encoded), its context parameters sorted by
// key and then value with empty ones dropped, and no processing directives
// (which gRPC does not support). Canonicalising a canonical name returns it
// unchanged, so a client and a server that each canonicalise a name agree
// on it whatever order or encoding either wrote it in.
package xdstp

import (
	"fmt"
	"sort"
	"strings"
)

// Scheme starts every new-style resource name.
const Scheme = "xdstp:"

// prefix is how a well-formed new-style name starts.
const prefix = "xdstp://"

// Is reports whether name is a new-style resource name: whether it starts
// with "xdstp:". Such a name that does not parse is invalid; it is not an
// old-style name.
func Is(name string) bool { return strings.HasPrefix(name, Scheme) }

// Param is one context parameter of a name.
type Param struct {
	Key, Value string
}

// Name is a parsed new-style resource name. Its fields hold the decoded
// text (no percent-encoding).
type Name struct {
	// Authority selects the servers (an entry of the bootstrap's
	// authorities); it may be empty.
	Authority string
	// Type is the resource type without the "type.googleapis.com/" prefix,
	// for example "envoy.config.cluster.v3.Cluster".
	Type string
	// ID is the rest of the path after the type; it may contain "/" and may
	// be empty.
	ID string
	// Params are the context parameters, sorted by key and then value.
	Params []Param
}

// Parse parses a new-style name. The error names the resource and says what
// is wrong with it.
func Parse(name string) (Name, error) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return Name{}, fmt.Errorf("resource name %q starts with %q but not with %q and an authority", name, Scheme, prefix)
	}
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest = rest[:i]
	}
	query := ""
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		rest, query = rest[:i], rest[i+1:]
	}
	slash := strings.IndexByte(rest, '/')
	if slash < 0 {
		return Name{}, fmt.Errorf("resource name %q has no resource type after its authority", name)
	}
	var (
		n   Name
		err error
	)
	if n.Authority, err = unescape(rest[:slash]); err != nil {
		return Name{}, fmt.Errorf("resource name %q: authority: %w", name, err)
	}
	path, err := unescape(rest[slash+1:])
	if err != nil {
		return Name{}, fmt.Errorf("resource name %q: path: %w", name, err)
	}
	typ, id, ok := strings.Cut(path, "/")
	if !ok || typ == "" {
		return Name{}, fmt.Errorf("resource name %q: the path must be TYPE/ID, got %q", name, path)
	}
	n.Type, n.ID = typ, id
	for part := range strings.SplitSeq(query, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		var p Param
		if p.Key, err = unescape(k); err != nil {
			return Name{}, fmt.Errorf("resource name %q: context parameter %q: %w", name, part, err)
		}
		if p.Value, err = unescape(v); err != nil {
			return Name{}, fmt.Errorf("resource name %q: context parameter %q: %w", name, part, err)
		}
		n.Params = append(n.Params, p)
	}
	sort.Slice(n.Params, func(i, j int) bool {
		a, b := n.Params[i], n.Params[j]
		return a.Key < b.Key || a.Key == b.Key && a.Value < b.Value
	})
	return n, nil
}

// String returns the canonical form of n.
func (n Name) String() string {
	var b strings.Builder
	b.WriteString(prefix)
	b.WriteString(EscapeAuthority(n.Authority))
	b.WriteByte('/')
	b.WriteString(EscapePath(n.Type))
	b.WriteByte('/')
	b.WriteString(EscapePath(n.ID))
	for i, p := range n.Params {
		if i == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		b.WriteString(escape(p.Key, inQuery))
		b.WriteByte('=')
		b.WriteString(escape(p.Value, inQuery))
	}
	return b.String()
}

// Canonical returns the canonical form of a resource name: old-style names
// unchanged, new-style names as Parse and String make them.
func Canonical(name string) (string, error) {
	if !Is(name) || IsCanonical(name) {
		return name, nil
	}
	n, err := Parse(name)
	if err != nil {
		return "", err
	}
	return n.String(), nil
}

// Received returns the canonical form of a name a server sent, to be
// matched against the names watched: the name itself when it is already
// canonical (which costs no allocation) or cannot be parsed (no watch can
// match it).
func Received(name string) string {
	if IsCanonical(name) {
		return name
	}
	if n, err := Parse(name); err == nil {
		return n.String()
	}
	return name
}

// IsCanonical reports, without allocating, whether name is an old-style
// name or a new-style name that canonicalisation certainly leaves as it is:
// one with no context parameters, directives or percent-encoding, made of
// bytes that need no encoding, with a type segment. It is a fast path for
// names read from responses; a false answer only means the full
// canonicalisation must run.
func IsCanonical[S ~string | ~[]byte](name S) bool {
	if !hasPrefix(name, Scheme) {
		return true
	}
	if !hasPrefix(name, prefix) {
		return false
	}
	rest := name[len(prefix):]
	// first and second are the positions of the slashes around the type.
	first, second := -1, -1
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		switch {
		case c == '/':
			if first < 0 {
				first = i
			} else if second < 0 {
				second = i
			}
		case first < 0 && !inAuthority(c), first >= 0 && !inPath(c):
			return false
		}
	}
	return second > first+1
}

// hasPrefix reports whether s starts with p.
func hasPrefix[S ~string | ~[]byte](s S, p string) bool {
	if len(s) < len(p) {
		return false
	}
	for i := 0; i < len(p); i++ {
		if s[i] != p[i] {
			return false
		}
	}
	return true
}

// Authority returns the decoded authority of a new-style name.
func Authority(name string) (string, error) {
	n, err := Parse(name)
	if err != nil {
		return "", err
	}
	return n.Authority, nil
}

// EscapeAuthority percent-encodes every byte that RFC 3986 does not allow
// in an authority.
func EscapeAuthority(s string) string { return escape(s, inAuthority) }

// EscapePath percent-encodes every byte that RFC 3986 does not allow in a
// path, keeping "/".
func EscapePath(s string) string { return escape(s, inPath) }

// unescape undoes percent-encoding; "+" stays "+".
func unescape(s string) (string, error) {
	i := strings.IndexByte(s, '%')
	if i < 0 {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			end := min(i+3, len(s))
			return "", fmt.Errorf("bad percent-encoding %q", s[i:end])
		}
		b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
		i += 2
	}
	return b.String(), nil
}

// escape writes every byte of s that allowed rejects as %XX.
func escape(s string, allowed func(byte) bool) string {
	clean := true
	for i := 0; i < len(s) && clean; i++ {
		clean = allowed(s[i])
	}
	if clean {
		return s
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if allowed(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xF])
	}
	return b.String()
}

func inAuthority(c byte) bool {
	return isUnreserved(c) || isSubDelim(c) || c == ':' || c == '@' || c == '[' || c == ']'
}

func inPath(c byte) bool { return isUnreserved(c) || isSubDelim(c) || c == ':' || c == '@' || c == '/' }

// inQuery allows what a query may hold except the separators of context
// parameters.
func inQuery(c byte) bool {
	return c != '&' && c != '=' && (isUnreserved(c) || isSubDelim(c) || c == ':' || c == '@' || c == '/' || c == '?')
}

func isUnreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

func isSubDelim(c byte) bool { return strings.IndexByte("!$&'()*+,;=", c) >= 0 }

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	default:
		return c - 'a' + 10
	}
}
