// Package certtest makes the certificates that tests of TLS need, with
// package certs (the one the xdswatch demo uses), failing the test on
// error: a CA, leaves it signs with the SANs asked for, and the PEM files
// of a file_watcher certificate provider, in the test's temporary
// directory, rewritten to rotate them.
package certtest

import (
	"os"
	"testing"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/certs"
)

// Names are the names a leaf certificate carries (certs.Names).
type Names = certs.Names

// Leaf is a certificate signed by a CA, with its key (certs.Leaf).
type Leaf = certs.Leaf

// CA is a certificate authority made for one test.
type CA struct{ *certs.CA }

// NewCA makes a self-signed CA named name.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	ca, err := certs.GenerateCA(name)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{ca}
}

// Issue signs a certificate for both server and client use with the
// names n.
func (ca *CA) Issue(t testing.TB, n Names) *Leaf {
	t.Helper()
	l, err := ca.Generate(n)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Files are the PEM files of a file_watcher certificate provider
// instance, in one directory of the test's temporary directory.
type Files struct{ *certs.Files }

// WriteFiles writes leaf (nil for none) and the roots of ca (nil for none)
// into a new directory of the test's temporary directory, as
// certificate.pem, key.pem and ca.pem.
func WriteFiles(t testing.TB, leaf *Leaf, ca *CA) *Files {
	t.Helper()
	dir, err := os.MkdirTemp(t.TempDir(), "certs")
	if err != nil {
		t.Fatal(err)
	}
	f, err := certs.WriteFilesIn(dir, leaf, ca.certs())
	if err != nil {
		t.Fatal(err)
	}
	return &Files{f}
}

// Rotate replaces the files with leaf (nil for none) and the roots of ca
// (nil for none), each by a rename, so that a reader never sees half a
// file.
func (f *Files) Rotate(t testing.TB, leaf *Leaf, ca *CA) {
	t.Helper()
	if err := f.Files.Rotate(leaf, ca.certs()); err != nil {
		t.Fatal(err)
	}
}

// certs returns the CA of package certs, nil for a nil ca.
func (ca *CA) certs() *certs.CA {
	if ca == nil {
		return nil
	}
	return ca.CA
}
