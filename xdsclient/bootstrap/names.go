package bootstrap

import (
	"fmt"
	"net/url"
	"strings"
)

// xdstpScheme starts every new-style resource name (xRFC TP1).
const xdstpScheme = "xdstp:"

// authorityPrefix is how every client Listener template of the authority
// name starts: "xdstp://<percent-encoded name>/".
func authorityPrefix(name string) string {
	return "xdstp://" + percentEncodeAuthority(name) + "/"
}

// xdstpAuthority returns the authority of an xdstp: resource name, with its
// percent-encoding undone.
func xdstpAuthority(name string) (string, error) {
	rest, ok := strings.CutPrefix(name, "xdstp://")
	if !ok {
		return "", fmt.Errorf("resource %q: an xdstp: name must start with \"xdstp://\" and an authority", name)
	}
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		rest = rest[:end]
	}
	auth, err := url.PathUnescape(rest)
	if err != nil {
		return "", fmt.Errorf("resource %q: authority %q: %w", name, rest, err)
	}
	return auth, nil
}

// ClientListenerResourceName returns the name of the Listener that a client
// channel to the target "xds://<authority>/<path>" subscribes to (gRFC A47).
// authority is "" when the target has none; one leading "/" is removed from
// path to give the host.
//
// With an authority, its ClientListenerResourceNameTemplate is used and
// "%s" is replaced by the percent-encoded host; the authority must be in
// Authorities. Without one, ClientDefaultListenerResourceNameTemplate is
// used, and the host is percent-encoded only when the template starts with
// "xdstp:"; if the name then starts with "xdstp:", its authority must be in
// Authorities.
func (c *Config) ClientListenerResourceName(authority, path string) (string, error) {
	host := strings.TrimPrefix(path, "/")
	if authority != "" {
		a, ok := c.Authorities[authority]
		if !ok {
			return "", fmt.Errorf("authority %q of target %q not found in xds bootstrap", authority, "xds://"+authority+"/"+host)
		}
		tmpl := ""
		if a != nil {
			tmpl = a.ClientListenerResourceNameTemplate
		}
		if tmpl == "" {
			tmpl = authorityPrefix(authority) + "envoy.config.listener.v3.Listener/%s"
		}
		return strings.ReplaceAll(tmpl, "%s", percentEncodePath(host)), nil
	}
	tmpl := c.ClientDefaultListenerResourceNameTemplate
	if tmpl == "" {
		tmpl = DefaultClientListenerResourceNameTemplate
	}
	return c.fillTemplate(tmpl, host)
}

// ServerListenerResourceName returns the name of the Listener that an
// xDS-enabled server listening on addr (such as "0.0.0.0:8080" or
// "[::]:8080") subscribes to, from ServerListenerResourceNameTemplate
// (gRFCs A36, A47). The address replaces "%s", percent-encoded when the
// template starts with "xdstp:"; then the name's authority must be in
// Authorities. An unset template is an error.
func (c *Config) ServerListenerResourceName(addr string) (string, error) {
	if c.ServerListenerResourceNameTemplate == "" {
		return "", fmt.Errorf("xds bootstrap has no server_listener_resource_name_template")
	}
	return c.fillTemplate(c.ServerListenerResourceNameTemplate, addr)
}

// fillTemplate replaces "%s" in tmpl by value, percent-encoded for xdstp:
// templates, and checks the authority of an xdstp: result.
func (c *Config) fillTemplate(tmpl, value string) (string, error) {
	if strings.HasPrefix(tmpl, xdstpScheme) {
		value = percentEncodePath(value)
	}
	name := strings.ReplaceAll(tmpl, "%s", value)
	if strings.HasPrefix(name, xdstpScheme) {
		if _, err := c.authorityOf(name); err != nil {
			return "", err
		}
	}
	return name, nil
}

// percentEncodePath encodes every byte that RFC 3986 does not allow in a
// path, keeping "/".
func percentEncodePath(s string) string {
	return percentEncode(s, func(b byte) bool { return b == ':' || b == '@' || b == '/' })
}

// percentEncodeAuthority encodes every byte that RFC 3986 does not allow in
// an authority.
func percentEncodeAuthority(s string) string {
	return percentEncode(s, func(b byte) bool { return b == ':' || b == '@' || b == '[' || b == ']' })
}

// percentEncode writes every byte of s that is neither unreserved, nor a
// sub-delimiter, nor allowed by extra as %XX with upper-case hex.
func percentEncode(s string, extra func(byte) bool) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isUnreserved(c) || isSubDelim(c) || extra(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xF])
	}
	return b.String()
}

func isUnreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

func isSubDelim(c byte) bool {
	return strings.IndexByte("!$&'()*+,;=", c) >= 0
}
