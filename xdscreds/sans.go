package xdscreds

import (
	"crypto/x509"
	"encoding/asn1"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
)

// sans are the SANs of a certificate that gRPC matches, as the
// certificate spells them.
type sans struct {
	dns, uri, ip []string
}

// oidSubjectAltName is the subjectAltName extension.
var oidSubjectAltName = asn1.ObjectIdentifier{2, 5, 29, 17}

// GeneralName tags (RFC 5280) of the SANs gRPC matches. Email SANs
// (rfc822Name) are not matched, as in C-core.
const (
	tagDNS = 2
	tagURI = 6
	tagIP  = 7
)

// sansOf reads the DNS, URI and IP SANs of cert from its subjectAltName
// extension: DNS and URI SANs byte for byte (crypto/x509 gives URIs only
// parsed and re-encoded), IP SANs as inet_ntop writes them, so that an
// IPv4-mapped IPv6 SAN reads "::ffff:a.b.c.d" as in C-core. A malformed
// extension, which crypto/x509 refuses before this, gives no SANs.
func sansOf(cert *x509.Certificate) sans {
	var s sans
	for _, ext := range cert.Extensions {
		if !ext.Id.Equal(oidSubjectAltName) {
			continue
		}
		var seq asn1.RawValue
		if rest, err := asn1.Unmarshal(ext.Value, &seq); err != nil || len(rest) != 0 || !seq.IsCompound {
			return sans{}
		}
		for b := seq.Bytes; len(b) > 0; {
			var name asn1.RawValue
			var err error
			if b, err = asn1.Unmarshal(b, &name); err != nil {
				return sans{}
			}
			if name.Class != asn1.ClassContextSpecific {
				continue
			}
			switch name.Tag {
			case tagDNS:
				s.dns = append(s.dns, string(name.Bytes))
			case tagURI:
				s.uri = append(s.uri, string(name.Bytes))
			case tagIP:
				if ip, ok := netip.AddrFromSlice(name.Bytes); ok {
					s.ip = append(s.ip, ip.String())
				}
			}
		}
	}
	return s
}

// Bounds of what an error quotes of a certificate or of the matchers, so
// that a certificate of many or long SANs cannot make a huge status
// message.
const (
	maxListed      = 8
	maxQuotedBytes = 256
)

// quote quotes s, cut to maxQuotedBytes.
func quote(s string) string {
	if len(s) > maxQuotedBytes {
		return strconv.Quote(s[:maxQuotedBytes]) + fmt.Sprintf("...[%d more bytes]", len(s)-maxQuotedBytes)
	}
	return strconv.Quote(s)
}

// list quotes the first maxListed strings of ss, then says how many
// more there are.
func list(ss []string) string {
	return listed(len(ss), func(i int) string { return quote(ss[i]) })
}

// listed writes the first maxListed of n items, then how many more there
// are.
func listed(n int, item func(i int) string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range min(n, maxListed) {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(item(i))
	}
	if n > maxListed {
		fmt.Fprintf(&b, " and %d more", n-maxListed)
	}
	b.WriteByte(']')
	return b.String()
}

// describe writes a matcher as its kind and value.
func describe(m matcher.String) string {
	s := m.Kind.String() + " " + quote(m.Value)
	if m.IgnoreCase {
		s += " ignore_case"
	}
	return s
}
