package certtest_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xdslens/xdslens/internal/testing/certtest"
)

func TestLeafNamesAndChain(t *testing.T) {
	ca := certtest.NewCA(t, "test-ca")
	leaf := ca.Issue(t, certtest.Names{
		CommonName: "svc", Organization: "org",
		DNS: []string{"svc.example.com"}, URIs: []string{"spiffe://example.org/ns/a/sa/b"}, IPs: []string{"127.0.0.1"},
	})
	c := leaf.Cert
	if c.Subject.CommonName != "svc" || len(c.Subject.Organization) != 1 || c.Subject.Organization[0] != "org" {
		t.Errorf("subject %v, want CN=svc,O=org", c.Subject)
	}
	if len(c.DNSNames) != 1 || len(c.URIs) != 1 || c.URIs[0].String() != "spiffe://example.org/ns/a/sa/b" || len(c.IPAddresses) != 1 {
		t.Errorf("SANs DNS %v URI %v IP %v, want one of each", c.DNSNames, c.URIs, c.IPAddresses)
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := c.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "svc.example.com", KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("verify for usage %v: %v", usage, err)
		}
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: certtest.NewCA(t, "other").Pool()}); err == nil {
		t.Error("the leaf verifies under another CA")
	}
}

// TestMutualTLS checks that two leaves of one CA complete a mutual TLS
// handshake, each seeing the other's certificate.
func TestMutualTLS(t *testing.T) {
	ca := certtest.NewCA(t, "test-ca")
	server := ca.Issue(t, certtest.Names{CommonName: "server", DNS: []string{"server.example.com"}})
	client := ca.Issue(t, certtest.Names{CommonName: "client", URIs: []string{"spiffe://example.org/client"}})
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	srv := tls.Server(c1, &tls.Config{Certificates: []tls.Certificate{server.TLS}, ClientCAs: ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert})
	cli := tls.Client(c2, &tls.Config{Certificates: []tls.Certificate{client.TLS}, RootCAs: ca.Pool(), ServerName: "server.example.com"})
	done := make(chan error, 1)
	go func() { done <- srv.Handshake() }()
	if err := cli.Handshake(); err != nil {
		t.Fatalf("client handshake: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("server handshake: %v", err)
	}
	if peer := srv.ConnectionState().PeerCertificates; len(peer) == 0 || peer[0].URIs[0].String() != "spiffe://example.org/client" {
		t.Errorf("server sees %v, want the client's certificate", peer)
	}
}

func TestFilesRotate(t *testing.T) {
	ca := certtest.NewCA(t, "test-ca")
	first := ca.Issue(t, certtest.Names{CommonName: "first"})
	f := certtest.WriteFiles(t, first, ca)
	read := func(p string) []byte {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if !bytes.Equal(read(f.Cert), first.CertPEM) || !bytes.Equal(read(f.Key), first.KeyPEM) || !bytes.Equal(read(f.CA), ca.PEM) {
		t.Fatal("the files do not hold what was written")
	}
	second := ca.Issue(t, certtest.Names{CommonName: "second"})
	f.Rotate(t, second, nil)
	if !bytes.Equal(read(f.Cert), second.CertPEM) || !bytes.Equal(read(f.Key), second.KeyPEM) || !bytes.Equal(read(f.CA), ca.PEM) {
		t.Error("after Rotate, the files do not hold the new leaf and the old roots")
	}
	if leftovers, _ := filepath.Glob(filepath.Join(f.Dir, "*.tmp")); len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}

	var cfg map[string]string
	if err := json.Unmarshal([]byte(f.FileWatcherJSON(1500*time.Millisecond)), &cfg); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"certificate_file": f.Cert, "private_key_file": f.Key, "ca_certificate_file": f.CA, "refresh_interval": "1.5s"}
	for k, v := range want {
		if cfg[k] != v {
			t.Errorf("FileWatcherJSON %s = %q, want %q", k, cfg[k], v)
		}
	}
	rootsOnly := certtest.WriteFiles(t, nil, ca)
	cfg = nil
	if err := json.Unmarshal([]byte(rootsOnly.FileWatcherJSON(time.Second)), &cfg); err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg["certificate_file"]; ok || len(cfg) != 2 {
		t.Errorf("roots-only FileWatcherJSON = %v, want ca_certificate_file and refresh_interval", cfg)
	}
}
