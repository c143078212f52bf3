package xdscreds_test

import (
	"context"
	"crypto/tls"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"

	"github.com/xdslens/xdslens/internal/certstore"
	"github.com/xdslens/xdslens/internal/testing/certtest"
)

// TestRotation: files rewritten with a new client certificate and new
// roots are taken, once the provider has read them, by new connections,
// while the connection already made stays up: no reconnect.
func TestRotation(t *testing.T) {
	first, second := newPKI(t, "ca-1"), newPKI(t, "ca-2")
	files := certtest.WriteFiles(t, first.client, first.ca)
	store := newStore(t, 20*time.Millisecond, map[string]*certtest.Files{"mesh": files})
	var serverCert atomic.Pointer[tls.Certificate]
	serverCert.Store(&first.server.TLS)
	trusted := first.ca.Pool()
	trusted.AddCert(second.ca.Cert)
	b := startTLS(t, backendConfig{getCert: serverCert.Load, clientCAs: trusted})
	sc := &security.Config{IdentityInstance: "mesh", RootInstance: "mesh"}

	old := dial(t, newCreds(t), b.addr, info(t, store, sc))
	if err := check(t, old); err != nil {
		t.Fatalf("RPC before the rotation: %v", err)
	}

	// The server moves to a certificate of the second CA, and the client's
	// files to the second CA and a client certificate it signed.
	serverCert.Store(&second.server.TLS)
	files.Rotate(t, second.client, second.ca)
	waitForKeyMaterial(t, store, second)

	if err := check(t, old); err != nil {
		t.Fatalf("RPC on the connection made before the rotation: %v", err)
	}
	if n := b.handshakes.Load(); n != 1 {
		t.Fatalf("%d handshakes after the rotation, want 1: the old connection must stay up", n)
	}
	if err := check(t, dial(t, newCreds(t), b.addr, info(t, store, sc))); err != nil {
		t.Fatalf("RPC on a new connection after the rotation: %v", err)
	}
	want := []string{first.client.Cert.SerialNumber.String(), second.client.Cert.SerialNumber.String()}
	if got := b.clientSerials(); !slices.Equal(got, want) {
		t.Errorf("client certificates seen by the server: %v, want the first, then the rotated one %v", got, want)
	}
}

// waitForKeyMaterial waits until the provider of instance "mesh" serves
// the client certificate and the CA of p.
func waitForKeyMaterial(t *testing.T, store *certstore.Store, p *pki) {
	t.Helper()
	src, err := store.Identity("mesh", "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		km, err := src.KeyMaterial(ctx)
		if err != nil {
			t.Fatalf("the rotated files were not read within 10s: %v", err)
		}
		if len(km.Certs) == 1 && km.Certs[0].Leaf.SerialNumber.Cmp(p.client.Cert.SerialNumber) == 0 && km.Roots.Equal(p.ca.Pool()) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("the rotated files were not read within 10s")
		case <-time.After(5 * time.Millisecond): // polling the provider, whose refresh is 20ms
		}
	}
}
