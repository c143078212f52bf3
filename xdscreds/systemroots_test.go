package xdscreds_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"

	"github.com/xdslens/xdslens/internal/testing/certtest"
)

// systemRootsEnv, set in the environment of a child test process, names
// the CA file that is the child's system roots (SSL_CERT_FILE), which Go
// reads once per process.
const systemRootsEnv = "XDSCREDS_TEST_SYSTEM_ROOTS_CHILD"

// TestSystemRoots: a cluster that asks for the system's roots (gRFC A82)
// verifies the server against them, and against nothing else. It runs
// itself again in a child process whose system roots are a test CA.
func TestSystemRoots(t *testing.T) {
	if os.Getenv(systemRootsEnv) != "" {
		checkSystemRoots(t)
		return
	}
	ca := certtest.NewCA(t, "system-ca")
	caFile := filepath.Join(t.TempDir(), "system-roots.pem")
	if err := os.WriteFile(caFile, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "server.pem")
	leaf := ca.Issue(t, serverSANs)
	if err := os.WriteFile(keyFile, append(leaf.CertPEM, leaf.KeyPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSystemRoots$", "-test.v")
	cmd.Env = append(os.Environ(), systemRootsEnv+"="+keyFile, "SSL_CERT_FILE="+caFile, "SSL_CERT_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child test process: %v\n%s", err, out)
	}
	t.Logf("child test process:\n%s", out)
}

// checkSystemRoots runs in the child: a server whose certificate the
// system CA signed is accepted, one of another CA refused.
func checkSystemRoots(t *testing.T) {
	pemData, err := os.ReadFile(os.Getenv(systemRootsEnv))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := tlsPair(pemData)
	if err != nil {
		t.Fatal(err)
	}
	// The store has no instance: system roots need none.
	store := newStore(t, time.Hour, map[string]*certtest.Files{"unused": certtest.WriteFiles(t, nil, certtest.NewCA(t, "unused"))})
	sc := &security.Config{SystemRootCerts: true, SANMatchers: []matcher.String{exact("server.example.com")}}

	trusted := startTLS(t, backendConfig{getCert: leaf})
	if err := check(t, dial(t, newCreds(t), trusted.addr, info(t, store, sc))); err != nil {
		t.Fatalf("RPC to a server of the system CA = %v, want OK", err)
	}
	untrusted := startTLS(t, backendConfig{cert: newPKI(t, "not-a-system-ca").server})
	wantHandshakeFailure(t, check(t, dial(t, newCreds(t), untrusted.addr, info(t, store, sc))), untrusted,
		"does not verify against the system's roots: x509: certificate signed by unknown authority")
}
