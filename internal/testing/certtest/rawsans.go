package certtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"math/big"
	"testing"
	"time"
)

// GeneralName tags (RFC 5280) of the SANs a test may write.
const (
	TagEmail = 1
	TagDNS   = 2
	TagURI   = 6
	TagIP    = 7
)

// GeneralName is one entry of a subjectAltName extension: b, as written,
// under tag.
func GeneralName(tag int, b []byte) asn1.RawValue {
	return asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: tag, Bytes: b}
}

// URISANs are URI SANs, each written byte for byte.
func URISANs(uris ...string) []asn1.RawValue {
	var out []asn1.RawValue
	for _, u := range uris {
		out = append(out, GeneralName(TagURI, []byte(u)))
	}
	return out
}

// SelfSigned returns a self-signed certificate whose subjectAltName
// extension holds names byte for byte (none when names is empty), as
// crypto/x509 parses it. Names given to Issue go through crypto/x509's
// template, which re-encodes URIs (it writes a scheme in lower case, a
// space as %20); these do not, so a test sees what a peer may send.
func SelfSigned(t testing.TB, names ...asn1.RawValue) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "raw"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	if len(names) > 0 {
		ext, err := asn1.Marshal(names)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.ExtraExtensions = []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 17}, Value: ext}}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
