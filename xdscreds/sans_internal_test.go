package xdscreds

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"math/big"
	"reflect"
	"testing"
	"time"
)

// TestDNSMatch: the DNS rules of an exact matcher, as C-core's
// VerifySubjectAlternativeName has them.
func TestDNSMatch(t *testing.T) {
	tests := []struct {
		san, name string
		want      bool
	}{
		{"a.example.com", "a.example.com", true},
		{"A.Example.COM", "a.example.com", true},
		{"a.example.com.", "a.example.com", true},
		{"a.example.com", "a.example.com.", true},
		{"a.example.com", "b.example.com", false},
		{"", "", false},
		{"", "a", false},
		{"a", "", false},
		{".example.com", ".example.com", false},
		{"a.example.com", ".a.example.com", false},
		{"*.example.com", "a.example.com", true},
		{"*.example.com", "A.EXAMPLE.com", true},
		{"*.example.com.", "a.example.com", true},
		{"*.example.com", "a.b.example.com", false},
		{"*.example.com", "example.com", false},
		{"*.example.com", ".example.com", false},
		{"*", "a", false},
		{"*.", "a.", false},
		{"*.com", "example.com", true}, // two labels: C-core allows it
		{"a*.example.com", "ab.example.com", false},
		{"*a.example.com", "ba.example.com", false},
		{"a.*.example.com", "a.b.example.com", false},
		{"*.*.example.com", "a.b.example.com", false},
		{"**.example.com", "a.example.com", false},
		{"a.example.com", "*.example.com", false}, // the name is never a pattern
	}
	for _, tt := range tests {
		if got := dnsMatch(tt.san, tt.name); got != tt.want {
			t.Errorf("dnsMatch(%q, %q) = %v, want %v", tt.san, tt.name, got, tt.want)
		}
	}
}

// generalName is a GeneralName of a subjectAltName extension.
func generalName(tag int, b []byte) asn1.RawValue {
	return asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: tag, Bytes: b}
}

// TestSANsAsWritten: SANs are read as the certificate spells them; an
// IPv4-mapped IPv6 SAN reads as inet_ntop writes it; email SANs are not
// read, as in C-core.
func TestSANsAsWritten(t *testing.T) {
	mapped := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1}
	v6 := []byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}
	ext, err := asn1.Marshal([]asn1.RawValue{
		generalName(tagDNS, []byte("Server.Example.COM")),
		generalName(1, []byte("ops@example.com")),
		generalName(tagURI, []byte("spiffe://example.org/a%2Fb")),
		generalName(tagIP, []byte{10, 0, 0, 1}),
		generalName(tagIP, mapped),
		generalName(tagIP, v6),
	})
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:    big.NewInt(1),
		Subject:         pkix.Name{CommonName: "raw"},
		NotBefore:       time.Now().Add(-time.Hour),
		NotAfter:        time.Now().Add(time.Hour),
		ExtraExtensions: []pkix.Extension{{Id: oidSubjectAltName, Value: ext}},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	want := sans{
		dns: []string{"Server.Example.COM"},
		uri: []string{"spiffe://example.org/a%2Fb"},
		ip:  []string{"10.0.0.1", "::ffff:127.0.0.1", "2001:db8::1"},
	}
	if got := sansOf(cert); !reflect.DeepEqual(got, want) {
		t.Errorf("sansOf = %+v, want %+v", got, want)
	}
	if got := sansOf(&x509.Certificate{}); !reflect.DeepEqual(got, sans{}) {
		t.Errorf("sansOf a certificate without SANs = %+v, want none", got)
	}
}
