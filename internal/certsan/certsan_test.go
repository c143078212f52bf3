package certsan_test

import (
	"crypto/x509"
	"encoding/asn1"
	"reflect"
	"strings"
	"testing"

	"github.com/xdslens/xdslens/internal/certsan"
	"github.com/xdslens/xdslens/internal/testing/certtest"
	"github.com/xdslens/xdslens/internal/testing/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// TestSPIFFEID: a certificate's SPIFFE ID, row by row as gRPC C-core finds
// one (ssl_utils.cc: IsSpiffeId, and the count of URI SANs in
// grpc_ssl_peer_to_auth_context).
func TestSPIFFEID(t *testing.T) {
	id2048 := "spiffe://td/" + strings.Repeat("a", 2048-len("spiffe://td/"))
	domain255 := strings.Repeat("d", 255)
	for _, tc := range []struct {
		name  string
		names []asn1.RawValue
		want  string // "" for none
	}{
		{"C-core: the only URI SAN, a SPIFFE ID", certtest.URISANs("spiffe://td/ns/a/sa/b"), "spiffe://td/ns/a/sa/b"},
		{"C-core: none beside another URI SAN (multiple URI SANs)", certtest.URISANs("spiffe://td/ns/a", "https://td/x"), ""},
		{"C-core: none with two SPIFFE IDs", certtest.URISANs("spiffe://td/a", "spiffe://td/b"), ""},
		{"C-core: DNS and email SANs do not count", append(certtest.URISANs("spiffe://td/a"), certtest.GeneralName(certtest.TagDNS, []byte("a.example.com")), certtest.GeneralName(certtest.TagEmail, []byte("a@example.com"))), "spiffe://td/a"},
		{"C-core: none without a URI SAN", []asn1.RawValue{certtest.GeneralName(certtest.TagDNS, []byte("a.example.com"))}, ""},
		{"C-core: none without SANs", nil, ""},
		{"C-core: none of another scheme", certtest.URISANs("https://td/ns/a"), ""},
		{"C-core: the scheme compared with case, none for SPIFFE://", certtest.URISANs("SPIFFE://td/ns/a"), ""},
		{"C-core: 2048 bytes accepted", certtest.URISANs(id2048), id2048},
		{"C-core: none over 2048 bytes", certtest.URISANs(id2048 + "a"), ""},
		{"C-core: a trust domain of 255 bytes accepted", certtest.URISANs("spiffe://" + domain255 + "/x"), "spiffe://" + domain255 + "/x"},
		{"C-core: none for a trust domain over 255 bytes", certtest.URISANs("spiffe://" + domain255 + "d/x"), ""},
		{"C-core: none without a path", certtest.URISANs("spiffe://td"), ""},
		{"C-core: none for the path /", certtest.URISANs("spiffe://td/"), ""},
		{"C-core: none when the path's first segment is empty", certtest.URISANs("spiffe://td//x"), ""},
		{"C-core: a later empty segment accepted (only the first is checked)", certtest.URISANs("spiffe://td/a//b"), "spiffe://td/a//b"},
		{"C-core: a trailing / accepted", certtest.URISANs("spiffe://td/a/"), "spiffe://td/a/"},
		{"C-core: an empty trust domain accepted (not checked)", certtest.URISANs("spiffe:///x"), "spiffe:///x"},
		{"C-core: a port, user info, a query and a fragment accepted (not checked)", certtest.URISANs("spiffe://u@td:8443/x?q=1#f"), "spiffe://u@td:8443/x?q=1#f"},
		{"C-core: upper case in the trust domain accepted, as written", certtest.URISANs("spiffe://TD.Example/x"), "spiffe://TD.Example/x"},
		{"C-core: read as written, not as crypto/x509 re-encodes it", certtest.URISANs("spiffe://td/a b"), "spiffe://td/a b"},
	} {
		cert := certtest.SelfSigned(t, tc.names...)
		id, u := certsan.SPIFFEID(cert)
		if id != tc.want {
			t.Errorf("%s: SPIFFE ID %.80q, want %.80q", tc.name, id, tc.want)
		}
		if (u == nil) != (id == "") || u != nil && u != cert.URIs[0] {
			t.Errorf("%s: URL %v with ID %.80q, want the certificate's only URI exactly when there is an ID", tc.name, u, id)
		}
	}
	if id, u := certsan.SPIFFEID(nil); id != "" || u != nil {
		t.Errorf("SPIFFEID(nil) = %q, %v; want none", id, u)
	}
}

// TestSANsAsWritten: SANs are read as the certificate spells them; an
// IPv4-mapped IPv6 SAN reads as inet_ntop writes it; email SANs are not
// read, as in C-core.
func TestSANsAsWritten(t *testing.T) {
	mapped := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1}
	v6 := []byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}
	cert := certtest.SelfSigned(t,
		certtest.GeneralName(certtest.TagDNS, []byte("Server.Example.COM")),
		certtest.GeneralName(certtest.TagEmail, []byte("ops@example.com")),
		certtest.GeneralName(certtest.TagURI, []byte("spiffe://example.org/a%2Fb")),
		certtest.GeneralName(certtest.TagIP, []byte{10, 0, 0, 1}),
		certtest.GeneralName(certtest.TagIP, mapped),
		certtest.GeneralName(certtest.TagIP, v6),
	)
	want := certsan.SANs{
		DNS: []string{"Server.Example.COM"},
		URI: []string{"spiffe://example.org/a%2Fb"},
		IP:  []string{"10.0.0.1", "::ffff:127.0.0.1", "2001:db8::1"},
	}
	if got := certsan.Of(cert); !reflect.DeepEqual(got, want) {
		t.Errorf("Of = %+v, want %+v", got, want)
	}
	if got := certsan.Of(&x509.Certificate{}); !reflect.DeepEqual(got, certsan.SANs{}) {
		t.Errorf("Of a certificate without SANs = %+v, want none", got)
	}
}
