// Package certs makes the certificates that the xdswatch demo serves its
// xDS-enabled server and calls it with: a CA, and certificates it signs
// with the SANs asked for, written as PEM files that a file_watcher
// certificate provider reads, and rewritten to rotate them. The tests of
// TLS make theirs with it too, through package certtest.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// CA is a certificate authority, made for one demo or one test.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA certificate, PEM-encoded.
	PEM []byte
}

var serial atomic.Int64

// GenerateCA makes a self-signed CA named name, valid for a day.
func GenerateCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: CA %q key: %w", name, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial.Add(1)),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"xdslens tests"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("certs: CA %q: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: CA %q: %w", name, err)
	}
	return &CA{Cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// Pool returns a pool holding the CA alone.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Leaf is a certificate signed by a CA, with its key.
type Leaf struct {
	Cert *x509.Certificate
	// CertPEM and KeyPEM are the certificate and its private key,
	// PEM-encoded.
	CertPEM, KeyPEM []byte
	// TLS is the pair, ready for a tls.Config.
	TLS tls.Certificate
}

// Names are the names a leaf certificate carries.
type Names struct {
	// CommonName is the subject's CN; Organization its O.
	CommonName, Organization string
	// DNS, URIs and IPs are its SANs.
	DNS  []string
	URIs []string
	IPs  []string
}

// Generate signs a certificate for both server and client use with the
// names n, valid for a day.
func (ca *CA) Generate(n Names) (*Leaf, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)),
		Subject:      pkix.Name{CommonName: n.CommonName},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     n.DNS,
	}
	if n.Organization != "" {
		tmpl.Subject.Organization = []string{n.Organization}
	}
	for _, u := range n.URIs {
		parsed, err := url.Parse(u)
		if err != nil {
			return nil, fmt.Errorf("certs: URI SAN %q: %w", u, err)
		}
		tmpl.URIs = append(tmpl.URIs, parsed)
	}
	for _, ip := range n.IPs {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("certs: issue %+v: %w", n, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: issue %+v: %w", n, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("certs: key: %w", err)
	}
	l := &Leaf{
		Cert:    cert,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
	if l.TLS, err = tls.X509KeyPair(l.CertPEM, l.KeyPEM); err != nil {
		return nil, fmt.Errorf("certs: key pair: %w", err)
	}
	return l, nil
}

// Files are the PEM files of a file_watcher certificate provider
// instance, in one directory.
type Files struct {
	// Dir is the directory; Cert, Key and CA the files' paths, "" for
	// those not written.
	Dir           string
	Cert, Key, CA string
}

// WriteFilesIn writes leaf (nil for none) and the roots of ca (nil for
// none) into dir, as certificate.pem, key.pem and ca.pem.
func WriteFilesIn(dir string, leaf *Leaf, ca *CA) (*Files, error) {
	f := &Files{Dir: dir}
	return f, f.Rotate(leaf, ca)
}

// Rotate replaces the files with leaf (nil for none) and the roots of ca
// (nil for none), each by a rename, so that a reader never sees half a
// file. The key is written before the certificate.
func (f *Files) Rotate(leaf *Leaf, ca *CA) error {
	var err error
	if leaf != nil {
		if f.Key, err = f.write("key.pem", leaf.KeyPEM); err != nil {
			return err
		}
		if f.Cert, err = f.write("certificate.pem", leaf.CertPEM); err != nil {
			return err
		}
	}
	if ca != nil {
		if f.CA, err = f.write("ca.pem", ca.PEM); err != nil {
			return err
		}
	}
	return nil
}

func (f *Files) write(name string, data []byte) (string, error) {
	path := filepath.Join(f.Dir, name)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return "", fmt.Errorf("certs: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("certs: %w", err)
	}
	return path, nil
}

// FileWatcherJSON returns the bootstrap "config" of a file_watcher
// instance reading f, refreshed every refresh.
func (f *Files) FileWatcherJSON(refresh time.Duration) string {
	s := "{"
	sep := ""
	for _, kv := range [][2]string{{"certificate_file", f.Cert}, {"private_key_file", f.Key}, {"ca_certificate_file", f.CA}} {
		if kv[1] != "" {
			s += fmt.Sprintf("%s%q: %q", sep, kv[0], kv[1])
			sep = ", "
		}
	}
	return s + fmt.Sprintf("%s\"refresh_interval\": \"%gs\"}", sep, refresh.Seconds())
}
