package bootstrap

import (
	"cmp"
	"net/url"
	"slices"
	"strings"

	"github.com/xdslens/xdslens/internal/truncate"
)

// Redacted stands, in a server URI as shown (see [ShowURI]), for each part
// of the URI that may carry a credential.
const Redacted = "[redacted]"

// MaxShownURI bounds a server URI as shown: a longer one is cut, marked
// "...[N more bytes]".
const MaxShownURI = 1 << 10

// ShownURI returns the server's URI as the client shows it everywhere but
// in the dial: [ShowURI] of URI.
func (s *ServerConfig) ShownURI() string { return ShowURI(s.URI) }

// ShowURI returns a gRPC target uri with every part that may carry a
// credential replaced by [Redacted], cut at [MaxShownURI] bytes: the user
// info of the authority ("passthrough://user:pw@host/..."), that of the
// endpoint in the path ("dns:///user:pw@host:443"), and the whole query
// and fragment. For a target without "//" that has an "@" (or "%40"),
// everything before the last "@" is the user info. The scheme, the host
// and port, and the path are kept, so that the result names the server
// and is the same every time for one uri. An "@" encoded as "%40" counts
// as an "@", since gRPC's resolvers decode the path.
//
// ShowURI is idempotent, and a uri with no "@", "%40", "?" or "#" is shown
// as it is.
func ShowURI(uri string) string { return parseURI(uri).shown }

// Redact returns text with every part of the server's URI that [ShowURI]
// hides replaced: the URI itself by its shown form, and each hidden part,
// as written and percent-decoded, by [Redacted]. It is for text that may
// quote the URI or the address it resolves to, such as the errors of a
// gRPC channel dialled with it.
func (s *ServerConfig) Redact(text string) string {
	return parseURI(s.URI).redact(text)
}

// parsedURI is a server URI split into what may be shown and what may not.
type parsedURI struct {
	raw, shown string
	// hidden are the parts of raw that shown leaves out.
	hidden []string
}

// parseURI splits uri: scheme "://" authority path, or a target without
// "//" (or whose scheme is not one), then "?" query and "#" fragment. It is
// the one parser of what a server URI may show. The shown form is cut to
// MaxShownURI before its query and fragment markers, which stay whole, so
// that showing it again changes nothing.
func parseURI(uri string) parsedURI {
	p := parsedURI{raw: uri}
	rest, tail := uri, ""
	if i := strings.IndexAny(uri, "?#"); i >= 0 {
		rest, tail = uri[:i], uri[i:]
	}
	var b strings.Builder
	if scheme, after, ok := strings.Cut(rest, "://"); ok && validScheme(scheme) {
		authority, path := after, ""
		if i := strings.IndexByte(after, '/'); i >= 0 {
			authority, path = after[:i], after[i:]
		}
		b.WriteString(scheme)
		b.WriteString("://")
		b.WriteString(p.hideUserInfo(authority))
		if path != "" {
			// The path's first segment may be an endpoint with user info
			// (dns:///user:pw@host); its leading "/" is kept.
			b.WriteByte('/')
			b.WriteString(p.hideUserInfo(path[1:]))
		}
	} else {
		b.WriteString(p.hideUserInfo(rest))
		// A resolver reads what follows "scheme:" (dns:user:pw@host):
		// that too is hidden, without the scheme.
		if at, _ := lastAt(rest); at > 0 {
			if scheme, opaque, ok := strings.Cut(rest[:at], ":"); ok && validScheme(scheme) {
				p.hide(opaque)
			}
		}
	}
	var markers string
	if tail != "" {
		q, frag, hasFrag := strings.Cut(tail, "#")
		if q != "" {
			p.hide(q[1:])
			markers = "?" + Redacted
		}
		if hasFrag {
			p.hide(frag)
			markers += "#" + Redacted
		}
	}
	p.shown = truncate.String(b.String(), MaxShownURI-len(markers)) + markers
	return p
}

// validScheme reports whether s is a URI scheme (RFC 3986): a letter, then
// letters, digits, "+", "-" and ".".
func validScheme(s string) bool {
	for i, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// hideUserInfo returns s with everything before its last "@" (or "%40")
// replaced by Redacted, and records what it hid.
func (p *parsedURI) hideUserInfo(s string) string {
	at, n := lastAt(s)
	if at < 0 {
		return s
	}
	p.hide(s[:at])
	return Redacted + "@" + s[at+n:]
}

// lastAt returns the index of the last "@" or "%40" of s and its length;
// -1 when there is none.
func lastAt(s string) (at, n int) {
	at, n = strings.LastIndexByte(s, '@'), 1
	if i := strings.LastIndex(s, "%40"); i > at {
		at, n = i, 3
	}
	return at, n
}

// hide records s as hidden, with its percent-decoded forms and those
// encoded again as a URL would write them.
func (p *parsedURI) hide(s string) {
	if s == "" || s == Redacted {
		return
	}
	forms := []string{s}
	for _, unescape := range []func(string) (string, error){url.PathUnescape, url.QueryUnescape} {
		if d, err := unescape(s); err == nil {
			forms = append(forms, d, url.PathEscape(d), url.QueryEscape(d), (&url.URL{Path: d}).EscapedPath(), (&url.URL{Fragment: d}).EscapedFragment())
		}
	}
	for _, f := range forms {
		if f != "" && !slices.Contains(p.hidden, f) {
			p.hidden = append(p.hidden, f)
		}
	}
}

// redact replaces, in text, the raw URI by its shown form and each hidden
// part by Redacted, in one pass, longest first at each place.
func (p parsedURI) redact(text string) string {
	if len(p.hidden) == 0 || text == "" {
		return text
	}
	parts := slices.Clone(p.hidden)
	slices.SortStableFunc(parts, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	pairs := []string{p.raw, p.shown}
	for _, h := range parts {
		pairs = append(pairs, h, Redacted)
	}
	return strings.NewReplacer(pairs...).Replace(text)
}
