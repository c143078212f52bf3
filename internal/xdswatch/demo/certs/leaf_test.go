package certs_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/certs"
)

// newCA, issue and writeFiles call GenerateCA, Generate and WriteFilesIn
// (in the test's temporary directory), failing the test on error.
func newCA(t *testing.T, name string) *certs.CA {
	t.Helper()
	ca, err := certs.GenerateCA(name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func issue(t *testing.T, ca *certs.CA, n certs.Names) *certs.Leaf {
	t.Helper()
	l, err := ca.Generate(n)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func writeFiles(t *testing.T, leaf *certs.Leaf, ca *certs.CA) *certs.Files {
	t.Helper()
	f, err := certs.WriteFilesIn(t.TempDir(), leaf, ca)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestIssue: a leaf carries the names asked for, verifies against its CA
// for both server and client use, and its PEM pair loads.
func TestIssue(t *testing.T) {
	ca := newCA(t, "ca")
	n := certs.Names{CommonName: "s", Organization: "o", DNS: []string{"a.example.com", "*.b.example.com"},
		URIs: []string{"spiffe://example.org/x"}, IPs: []string{"127.0.0.1", "::1"}}
	leaf := issue(t, ca, n)
	c := leaf.Cert
	if c.Subject.CommonName != "s" || !slices.Equal(c.Subject.Organization, []string{"o"}) || !slices.Equal(c.DNSNames, n.DNS) ||
		len(c.URIs) != 1 || c.URIs[0].String() != n.URIs[0] || len(c.IPAddresses) != 2 || c.IPAddresses[1].String() != "::1" {
		t.Errorf("certificate names: CN %q, O %v, DNS %v, URIs %v, IPs %v; want %+v", c.Subject.CommonName, c.Subject.Organization, c.DNSNames, c.URIs, c.IPAddresses, n)
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := c.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("verify for usage %v: %v", usage, err)
		}
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: newCA(t, "other").Pool()}); err == nil {
		t.Error("the leaf verifies against another CA")
	}
	if _, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM); err != nil {
		t.Errorf("PEM pair: %v", err)
	}
	if other := issue(t, ca, n); other.Cert.SerialNumber.Cmp(c.SerialNumber) == 0 {
		t.Error("two leaves share a serial number")
	}
}

// TestFiles: the files hold what was written, a rotation replaces them,
// and the file_watcher config names them.
func TestFiles(t *testing.T) {
	ca := newCA(t, "ca")
	first := issue(t, ca, certs.Names{CommonName: "first"})
	f := writeFiles(t, first, ca)
	read := func(path string) []byte {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if !bytes.Equal(read(f.Cert), first.CertPEM) || !bytes.Equal(read(f.Key), first.KeyPEM) || !bytes.Equal(read(f.CA), ca.PEM) {
		t.Error("the files do not hold the leaf and the CA written")
	}
	second := issue(t, ca, certs.Names{CommonName: "second"})
	if err := f.Rotate(second, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read(f.Cert), second.CertPEM) || !bytes.Equal(read(f.Key), second.KeyPEM) || !bytes.Equal(read(f.CA), ca.PEM) {
		t.Error("after Rotate the files do not hold the new leaf and the old CA")
	}
	var cfg struct {
		Cert    string `json:"certificate_file"`
		Key     string `json:"private_key_file"`
		CA      string `json:"ca_certificate_file"`
		Refresh string `json:"refresh_interval"`
	}
	if err := json.Unmarshal([]byte(f.FileWatcherJSON(1500*time.Millisecond)), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Cert != f.Cert || cfg.Key != f.Key || cfg.CA != f.CA || cfg.Refresh != "1.5s" || filepath.Dir(cfg.Cert) != f.Dir {
		t.Errorf("FileWatcherJSON = %+v, want the files of %+v refreshed every 1.5s", cfg, f)
	}
	rootsOnly := writeFiles(t, nil, ca)
	if rootsOnly.Cert != "" || rootsOnly.Key != "" {
		t.Errorf("WriteFilesIn without a leaf wrote %q and %q", rootsOnly.Cert, rootsOnly.Key)
	}
	if got := rootsOnly.FileWatcherJSON(time.Second); got != `{"ca_certificate_file": "`+rootsOnly.CA+`", "refresh_interval": "1s"}` {
		t.Errorf("FileWatcherJSON of roots only = %s", got)
	}
}
