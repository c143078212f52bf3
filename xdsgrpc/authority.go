package xdsgrpc

import (
	"strings"

	"google.golang.org/grpc/resolver"
)

// Authority returns the authority of a channel to target when neither
// grpc.WithAuthority nor its transport credentials name one, made as gRPC
// makes it: the target's endpoint (its path without the leading "/"),
// each byte that RFC 3986 does not allow in an authority percent-encoded,
// and "localhost" before an endpoint that is only a port (":8080"). The
// channel chooses its RouteConfiguration's virtual host by it (the data
// plane authority of gRFC A74), and so does an explanation of its RPCs.
func Authority(target resolver.Target) string {
	endpoint := target.URL.Path
	if endpoint == "" {
		endpoint = target.URL.Opaque
	}
	endpoint = strings.TrimPrefix(endpoint, "/")
	if strings.HasPrefix(endpoint, ":") {
		return "localhost" + encodeAuthority(endpoint)
	}
	return encodeAuthority(endpoint)
}

// OverrideAuthority gives a channel the authority Authority returns: the
// one gRPC would give it, which the resolver matches virtual hosts with.
func (b *Builder) OverrideAuthority(target resolver.Target) string { return Authority(target) }

// encodeAuthority percent-encodes the bytes of s that may not appear in
// an authority (RFC 3986, 3.2): all but letters, digits, the unreserved
// "-._~", the sub-delimiters "!$&'()*+,;=" and ":[]@".
func encodeAuthority(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if allowedInAuthority(c) {
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

func allowedInAuthority(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:[]@", c) >= 0
}
