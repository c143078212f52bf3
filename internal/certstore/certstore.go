// Package certstore builds the certificate provider instances of a
// bootstrap's "certificate_providers" (gRFC A29) and shares them: the
// TLS of xDS-enabled servers and of xDS channels takes its certificates
// and roots from here.
//
// A Store belongs to one bootstrap. [For] hands out the Store of a
// *bootstrap.Config, shared by every user of the same config (the clients
// of one xdsclient.Pool share theirs) and reference-counted: the last
// release closes its providers. A provider instance is built on first use
// and then shared by every user of the Store.
//
// The "file_watcher" plugin is grpc-go's pemfile provider: it reads
// certificate_file, private_key_file and ca_certificate_file at once and
// again every refresh_interval, and takes files whose contents changed
// (a certificate and a key that do not match are skipped until both are
// replaced). Instances of other plugins are built by the plugin of that
// name registered with grpc-go's credentials/tls/certprovider package, as
// grpc-go does; an instance of a plugin nobody registered fails when it is
// first used, naming the plugin.
package certstore

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc/credentials/tls/certprovider"
	"google.golang.org/grpc/credentials/tls/certprovider/pemfile"

	"github.com/xdslens/xdslens/xdsclient/bootstrap"
)

// Source gives the current certificates and roots of one provider
// instance.
type Source interface {
	// KeyMaterial returns the current key material, waiting for the first
	// until ctx is done.
	KeyMaterial(ctx context.Context) (*certprovider.KeyMaterial, error)
}

// Store holds the provider instances of one bootstrap.
type Store struct {
	providers map[string]bootstrap.CertificateProvider

	mu     sync.Mutex
	built  map[instanceKey]*source
	closed bool
}

// source is a built provider, which fails once its store is closed.
type source struct {
	p        certprovider.Provider
	s        *Store
	instance string
}

func (src *source) KeyMaterial(ctx context.Context) (*certprovider.KeyMaterial, error) {
	src.s.mu.Lock()
	closed := src.s.closed
	src.s.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("certificate provider instance %q: the store is closed", src.instance)
	}
	km, err := src.p.KeyMaterial(ctx)
	if err != nil {
		return nil, fmt.Errorf("certificate provider instance %q: %w", src.instance, err)
	}
	return km, nil
}

// instanceKey names a built provider: file_watcher instances are built
// once, for every certificate name and use; other plugins once per
// certificate name and use, as grpc-go's build options tell them apart.
type instanceKey struct {
	instance, certName string
	identity           bool
}

// New returns a store of cfg's certificate providers of its own, which
// the caller closes.
func New(cfg *bootstrap.Config) *Store {
	return &Store{providers: cfg.CertificateProviders, built: map[instanceKey]*source{}}
}

// shared holds the stores handed out by For.
var shared = struct {
	sync.Mutex
	stores map[*bootstrap.Config]*sharedStore
}{stores: map[*bootstrap.Config]*sharedStore{}}

type sharedStore struct {
	s    *Store
	refs int
}

// For returns the store of cfg, shared by every caller with the same
// config, and a release func to call once when done with it: the last
// release closes the store.
func For(cfg *bootstrap.Config) (*Store, func()) {
	shared.Lock()
	defer shared.Unlock()
	ss := shared.stores[cfg]
	if ss == nil {
		ss = &sharedStore{s: New(cfg)}
		shared.stores[cfg] = ss
	}
	ss.refs++
	var once sync.Once
	return ss.s, func() {
		once.Do(func() {
			shared.Lock()
			ss.refs--
			last := ss.refs == 0
			if last {
				delete(shared.stores, cfg)
			}
			shared.Unlock()
			if last {
				ss.s.Close()
			}
		})
	}
}

// Identity returns the source of the certificate chain a peer is shown,
// from instance (and certName, the resource's certificate_name).
func (s *Store) Identity(instance, certName string) (Source, error) {
	return s.source(instance, certName, true)
}

// Roots returns the source of the roots that peers' certificates are
// verified with.
func (s *Store) Roots(instance, certName string) (Source, error) {
	return s.source(instance, certName, false)
}

func (s *Store) source(instance, certName string, identity bool) (Source, error) {
	cp, ok := s.providers[instance]
	if !ok {
		return nil, fmt.Errorf("certificate provider instance %q is not in the bootstrap's certificate_providers", instance)
	}
	key := instanceKey{instance: instance, certName: certName, identity: identity}
	if cp.FileWatcher != nil {
		key = instanceKey{instance: instance}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("certificate provider instance %q: the store is closed", instance)
	}
	if p := s.built[key]; p != nil {
		return p, nil
	}
	p, err := build(cp, certName, identity)
	if err != nil {
		return nil, fmt.Errorf("certificate provider instance %q: %w", instance, err)
	}
	src := &source{p: p, s: s, instance: instance}
	s.built[key] = src
	return src, nil
}

// build builds a provider instance.
func build(cp bootstrap.CertificateProvider, certName string, identity bool) (certprovider.Provider, error) {
	if fw := cp.FileWatcher; fw != nil {
		return pemfile.NewProvider(pemfile.Options{
			CertFile:        fw.CertificateFile,
			KeyFile:         fw.PrivateKeyFile,
			RootFile:        fw.CACertificateFile,
			RefreshDuration: fw.RefreshInterval,
		})
	}
	p, err := certprovider.GetProvider(cp.PluginName, cp.Config, certprovider.BuildOptions{CertName: certName, WantIdentity: identity, WantRoot: !identity})
	if err != nil {
		return nil, fmt.Errorf("plugin %q: %v", cp.PluginName, err)
	}
	return p, nil
}

// Close closes every provider built; sources obtained before fail from
// then on.
func (s *Store) Close() {
	s.mu.Lock()
	built := s.built
	s.built, s.closed = nil, true
	s.mu.Unlock()
	for _, src := range built {
		src.p.Close()
	}
}
