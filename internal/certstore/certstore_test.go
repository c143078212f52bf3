package certstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/credentials/tls/certprovider"

	"github.com/xdslens/xdslens/internal/certstore"
	"github.com/xdslens/xdslens/internal/testing/certtest"
	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit)) }

// bootstrapWith parses a bootstrap whose certificate_providers are the
// JSON object providers.
func bootstrapWith(t *testing.T, providers string) *bootstrap.Config {
	t.Helper()
	cfg, err := bootstrap.Parse([]byte(`{"xds_servers": [{"server_uri": "localhost:1", "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": "n"}, "certificate_providers": ` + providers + `}`))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func fileWatcher(f *certtest.Files, refresh time.Duration) string {
	return fmt.Sprintf(`{"plugin_name": "file_watcher", "config": %s}`, f.FileWatcherJSON(refresh))
}

// leafOf returns the serial number of the identity certificate of km.
func leafSerial(t *testing.T, km *certprovider.KeyMaterial) string {
	t.Helper()
	if len(km.Certs) != 1 || km.Certs[0].Leaf == nil {
		t.Fatalf("key material has %d certificates, want 1 parsed", len(km.Certs))
	}
	return km.Certs[0].Leaf.SerialNumber.String()
}

func keyMaterial(t *testing.T, s certstore.Source) *certprovider.KeyMaterial {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	km, err := s.KeyMaterial(ctx)
	if err != nil {
		t.Fatalf("KeyMaterial: %v", err)
	}
	return km
}

func TestFileWatcherRotation(t *testing.T) {
	ca := certtest.NewCA(t, "ca")
	first := ca.Issue(t, certtest.Names{DNS: []string{"server.example.com"}})
	files := certtest.WriteFiles(t, first, ca)
	cfg := bootstrapWith(t, `{"id": `+fileWatcher(files, 20*time.Millisecond)+`}`)
	store, release := certstore.For(cfg)
	defer release()

	id, err := store.Identity("id", "")
	if err != nil {
		t.Fatal(err)
	}
	roots, err := store.Roots("id", "ignored by file_watcher")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := leafSerial(t, keyMaterial(t, id)), first.Cert.SerialNumber.String(); got != want {
		t.Errorf("identity serial %s, want the first certificate's %s", got, want)
	}
	if km := keyMaterial(t, roots); km.Roots == nil || !km.Roots.Equal(ca.Pool()) {
		t.Errorf("roots %v, want the CA's", km.Roots)
	}

	// Rotated files are taken at the next refresh, by every source.
	otherCA := certtest.NewCA(t, "other-ca")
	second := otherCA.Issue(t, certtest.Names{DNS: []string{"server.example.com"}})
	files.Rotate(t, second, otherCA)
	waitFor(t, "the rotated certificate and roots", func() bool {
		km := keyMaterial(t, id)
		return leafSerial(t, km) == second.Cert.SerialNumber.String() && km.Roots.Equal(otherCA.Pool())
	})
}

func TestSharedPerBootstrap(t *testing.T) {
	ca := certtest.NewCA(t, "ca")
	files := certtest.WriteFiles(t, ca.Issue(t, certtest.Names{CommonName: "s"}), ca)
	cfg := bootstrapWith(t, `{"id": `+fileWatcher(files, time.Minute)+`}`)

	a, releaseA := certstore.For(cfg)
	b, releaseB := certstore.For(cfg)
	if a != b {
		t.Fatal("two users of one bootstrap got different stores")
	}
	other, releaseOther := certstore.For(bootstrapWith(t, `{"id": `+fileWatcher(files, time.Minute)+`}`))
	defer releaseOther()
	if other == a {
		t.Fatal("two bootstraps share a store")
	}
	idA, err := a.Identity("id", "")
	if err != nil {
		t.Fatal(err)
	}
	rootsB, err := b.Roots("id", "")
	if err != nil {
		t.Fatal(err)
	}
	if idA != rootsB {
		t.Error("the uses of one file_watcher instance got two providers, want one")
	}
	keyMaterial(t, idA)

	releaseA()
	releaseA() // a second call does nothing
	if _, err := idA.KeyMaterial(context.Background()); err != nil {
		t.Errorf("after the first of two releases: %v, want the provider still open", err)
	}
	releaseB()
	if _, err := idA.KeyMaterial(context.Background()); err == nil {
		t.Error("after the last release the provider still serves key material")
	}
	if _, err := a.Identity("id", ""); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Identity on a closed store = %v, want an error saying it is closed", err)
	}
	c, releaseC := certstore.For(cfg)
	defer releaseC()
	if c == a {
		t.Error("For after the last release returned the closed store")
	}
}

// echoPlugin is a certificate provider plugin registered with grpc-go,
// whose config names an error to fail with, or nothing.
type echoPlugin struct{}

func (echoPlugin) Name() string { return "xdslens-test-plugin" }

func (echoPlugin) ParseConfig(c any) (*certprovider.BuildableConfig, error) {
	var cfg struct{ Fail string }
	if err := json.Unmarshal(c.(json.RawMessage), &cfg); err != nil {
		return nil, err
	}
	if cfg.Fail != "" {
		return nil, fmt.Errorf("refused: %s", cfg.Fail)
	}
	return certprovider.NewBuildableConfig("xdslens-test-plugin", c.(json.RawMessage), func(o certprovider.BuildOptions) certprovider.Provider {
		return staticProvider{o}
	}), nil
}

type staticProvider struct{ opts certprovider.BuildOptions }

func (p staticProvider) KeyMaterial(context.Context) (*certprovider.KeyMaterial, error) {
	return nil, fmt.Errorf("built for %q, identity %v, root %v", p.opts.CertName, p.opts.WantIdentity, p.opts.WantRoot)
}
func (staticProvider) Close() {}

func init() { certprovider.Register(echoPlugin{}) }

func TestPluginsAndErrors(t *testing.T) {
	cfg := bootstrapWith(t, `{
		"registered": {"plugin_name": "xdslens-test-plugin", "config": {}},
		"refused": {"plugin_name": "xdslens-test-plugin", "config": {"fail": "no"}},
		"unknown": {"plugin_name": "nobody-registered-this"},
		"missing-files": {"plugin_name": "file_watcher", "config": {"ca_certificate_file": "/nonexistent/ca.pem"}}
	}`)
	s := certstore.New(cfg)
	defer s.Close()
	src, err := s.Roots("registered", "cert-a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.KeyMaterial(context.Background()); err == nil || err.Error() != `certificate provider instance "registered": built for "cert-a", identity false, root true` {
		t.Errorf("a registered plugin's provider: %v, want it built with the certificate name and the use", err)
	}
	for _, tc := range []struct{ instance, want string }{
		{"refused", `certificate provider instance "refused": plugin "xdslens-test-plugin": refused: no`},
		{"unknown", `certificate provider instance "unknown": plugin "nobody-registered-this": no certificate provider builder found for "nobody-registered-this"`},
		{"not-there", `certificate provider instance "not-there" is not in the bootstrap's certificate_providers`},
	} {
		if _, err := s.Identity(tc.instance, ""); err == nil || err.Error() != tc.want {
			t.Errorf("Identity(%q) = %v, want %q", tc.instance, err, tc.want)
		}
	}
	// Files that cannot be read leave the source without key material.
	src, err = s.Roots("missing-files", "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := src.KeyMaterial(ctx); err == nil {
		t.Error("a file_watcher instance whose file does not exist gave key material")
	}
}

// A file_watcher instance whose certificate and key do not match keeps
// serving the pair it had until both match again, and roots taken before
// a reload stay what they were: a handshake verifies against the pool it
// took at its start, whatever is read during it.
func TestFileWatcherMismatchedKeyAndReload(t *testing.T) {
	ca := certtest.NewCA(t, "ca")
	first := ca.Issue(t, certtest.Names{DNS: []string{"server.example.com"}})
	files := certtest.WriteFiles(t, first, ca)
	store, release := certstore.For(bootstrapWith(t, `{"id": `+fileWatcher(files, 10*time.Millisecond)+`}`))
	defer release()
	id, err := store.Identity("id", "")
	if err != nil {
		t.Fatal(err)
	}
	before := keyMaterial(t, id)
	pool := before.Roots

	// The certificate of another key, and new roots, in one refresh: the
	// roots are taken, the certificate is not.
	second := ca.Issue(t, certtest.Names{DNS: []string{"server.example.com"}})
	if err := os.WriteFile(files.Cert+".tmp", second.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(files.Cert+".tmp", files.Cert); err != nil {
		t.Fatal(err)
	}
	// Roots rotated twice: the read that takes the second began after the
	// certificate was written.
	for _, name := range []string{"other-ca", "third-ca"} {
		next := certtest.NewCA(t, name)
		files.Rotate(t, nil, next)
		waitFor(t, "the roots of "+name, func() bool { return keyMaterial(t, id).Roots.Equal(next.Pool()) })
	}
	if got := leafSerial(t, keyMaterial(t, id)); got != first.Cert.SerialNumber.String() {
		t.Errorf("identity %s after a certificate without its key, want the first, %s", got, first.Cert.SerialNumber)
	}
	if !pool.Equal(ca.Pool()) {
		t.Error("the roots taken before the reload changed with it")
	}

	// Its key too: the pair is taken.
	files.Rotate(t, second, nil)
	waitFor(t, "the second certificate", func() bool { return leafSerial(t, keyMaterial(t, id)) == second.Cert.SerialNumber.String() })
}

// waitFor polls cond, the provider's state, until it holds: gRPC's
// file_watcher provider tells no one when it has read its files again,
// so there is no event to wait on.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s not within 10s", what)
		}
		time.Sleep(2 * time.Millisecond) // the provider reads the files every 10ms
	}
}
