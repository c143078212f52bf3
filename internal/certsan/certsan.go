// Package certsan reads a certificate's subject alternative names as the
// certificate spells them (crypto/x509 gives URIs only parsed and
// re-encoded), and the SPIFFE ID among them by gRPC C-core's rules: the
// one reader that channels (xdscreds) and xDS-enabled servers (httpfilter,
// xdsserver) share, so both sides name a peer alike.
//
// A certificate has a SPIFFE ID, its URI SAN as written, when, as in
// C-core (IsSpiffeId and grpc_ssl_peer_to_auth_context in ssl_utils.cc):
//
//	| rule                                                                        | none for                                        |
//	|-----------------------------------------------------------------------------|-------------------------------------------------|
//	| exactly one URI SAN, of any scheme                                          | two URI SANs, even two spiffe:// ones           |
//	| that SAN begins with "spiffe://", compared with case                        | "SPIFFE://td/x", "https://td/x"                 |
//	| it is at most 2048 bytes                                                    | 2049 bytes                                      |
//	| split at each "/", its fourth piece (the path's first segment) is not empty | "spiffe://td", "spiffe://td/", "spiffe://td//x" |
//	| its third piece (the trust domain) is at most 255 bytes                     | a trust domain of 256 bytes                     |
//
// Nothing else is checked, as C-core checks nothing else: an empty trust
// domain ("spiffe:///x"), a port, user info, a query or a fragment, an
// empty segment after the first ("spiffe://td/a//b") and upper-case
// letters in the trust domain are all accepted, though the SPIFFE
// specification forbids them.
package certsan

import (
	"crypto/x509"
	"encoding/asn1"
	"net/netip"
	"net/url"
	"strings"
)

// SANs are the SANs of a certificate that gRPC reads, as the certificate
// spells them.
type SANs struct {
	// DNS are the dNSName SANs, byte for byte.
	DNS []string
	// URI are the uniformResourceIdentifier SANs, byte for byte.
	URI []string
	// IP are the iPAddress SANs as inet_ntop writes them: an IPv4-mapped
	// IPv6 SAN reads "::ffff:a.b.c.d", as in C-core.
	IP []string
}

// oidSubjectAltName is the subjectAltName extension.
var oidSubjectAltName = asn1.ObjectIdentifier{2, 5, 29, 17}

// GeneralName tags (RFC 5280) of the SANs gRPC reads. Email SANs
// (rfc822Name) are not read, as in C-core's SAN matching.
const (
	tagDNS = 2
	tagURI = 6
	tagIP  = 7
)

// Of reads the DNS, URI and IP SANs of cert from its subjectAltName
// extension. A malformed extension, which crypto/x509 refuses before
// this, gives no SANs.
func Of(cert *x509.Certificate) SANs {
	var s SANs
	for _, ext := range cert.Extensions {
		if !ext.Id.Equal(oidSubjectAltName) {
			continue
		}
		var seq asn1.RawValue
		if rest, err := asn1.Unmarshal(ext.Value, &seq); err != nil || len(rest) != 0 || !seq.IsCompound {
			return SANs{}
		}
		for b := seq.Bytes; len(b) > 0; {
			var name asn1.RawValue
			var err error
			if b, err = asn1.Unmarshal(b, &name); err != nil {
				return SANs{}
			}
			if name.Class != asn1.ClassContextSpecific {
				continue
			}
			switch name.Tag {
			case tagDNS:
				s.DNS = append(s.DNS, string(name.Bytes))
			case tagURI:
				s.URI = append(s.URI, string(name.Bytes))
			case tagIP:
				if ip, ok := netip.AddrFromSlice(name.Bytes); ok {
					s.IP = append(s.IP, ip.String())
				}
			}
		}
	}
	return s
}

// Bounds of a SPIFFE ID, as C-core checks them.
const (
	maxIDBytes          = 2048
	maxTrustDomainBytes = 255
)

// SPIFFEID returns the SPIFFE ID of cert by the rules of the package
// documentation: id as the certificate spells it, and u as crypto/x509
// parsed it (for credentials.TLSInfo.SPIFFEID); "" and nil when cert has
// none.
func SPIFFEID(cert *x509.Certificate) (id string, u *url.URL) {
	if cert == nil || len(cert.URIs) != 1 {
		return "", nil
	}
	uris := Of(cert).URI
	if len(uris) != 1 || !isSPIFFEID(uris[0]) {
		return "", nil
	}
	return uris[0], cert.URIs[0]
}

// isSPIFFEID reports whether uri, a URI SAN as written, is a SPIFFE ID as
// C-core's IsSpiffeId takes one.
func isSPIFFEID(uri string) bool {
	if !strings.HasPrefix(uri, "spiffe://") || len(uri) > maxIDBytes {
		return false
	}
	// "spiffe:", "", the trust domain, the path's first segment, the rest.
	pieces := strings.SplitN(uri, "/", 5)
	return len(pieces) >= 4 && pieces[3] != "" && len(pieces[2]) <= maxTrustDomainBytes
}
