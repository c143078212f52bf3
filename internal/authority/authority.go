// Package authority makes the authority gRPC gives a channel from its
// target's endpoint when neither grpc.WithAuthority nor the transport
// credentials name one: the endpoint with each byte that RFC 3986 does not
// allow in an authority percent-encoded, and "localhost" before an
// endpoint that is only a port. xDS channels choose their virtual host by
// it, and the client's own channels to xDS servers send it.
package authority

import "strings"

// OfEndpoint returns the authority of a channel whose target's endpoint
// (its path without the leading "/") is endpoint.
func OfEndpoint(endpoint string) string {
	if strings.HasPrefix(endpoint, ":") {
		return "localhost" + Escape(endpoint)
	}
	return Escape(endpoint)
}

// Escape percent-encodes the bytes of s that may not appear in an
// authority (RFC 3986, 3.2): all but letters, digits, the unreserved
// "-._~", the sub-delimiters "!$&'()*+,;=" and ":[]@". It returns s itself
// when nothing needs escaping.
func Escape(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if allowed(c) {
			if b.Len() > 0 {
				b.WriteByte(c)
			}
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(s) + 8)
			b.WriteString(s[:i])
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	if b.Len() == 0 {
		return s
	}
	return b.String()
}

func allowed(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:[]@", c) >= 0
}
