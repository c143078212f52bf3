package xdscreds

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"

	"google.golang.org/grpc/credentials/tls/certprovider"

	"github.com/xdslens/xdslens/internal/certsan"
	"github.com/xdslens/xdslens/internal/certstore"
	"github.com/xdslens/xdslens/internal/handshake"
)

// clientConfig builds the tls.Config of one handshake from the cluster's
// settings and the key material its providers hold now: a provider that
// re-read rotated files serves the new certificates from the next
// handshake on, and connections already made are left alone.
func clientConfig(ctx context.Context, info *handshake.Info) (*tls.Config, error) {
	sc := info.Settings.Security()
	if sc == nil || info.Store == nil {
		return nil, errors.New("the address's TLS settings are incomplete (no security config or certificate store)")
	}
	v := &verifier{sc: sc, sans: info.Settings.SANs(), serverName: serverName(sc, info.Hostname)}
	if !sc.SystemRootCerts {
		roots, err := rootsOf(ctx, info)
		if err != nil {
			return nil, err
		}
		v.roots = roots
	}
	cfg := &tls.Config{
		// The chain is verified in VerifyConnection, against the cluster's
		// roots, and the server name is not: the cluster's SAN matchers
		// stand for it (gRFC A29).
		InsecureSkipVerify: true,
		VerifyConnection:   v.verify,
		ServerName:         v.serverName,
		NextProtos:         []string{"h2"},
		MinVersion:         tls.VersionTLS12,
	}
	if sc.IdentityInstance != "" {
		certs, err := identityOf(ctx, info)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = certs
	}
	return cfg, nil
}

// rootsOf returns the roots of the cluster's root provider instance.
func rootsOf(ctx context.Context, info *handshake.Info) (*x509.CertPool, error) {
	sc := info.Settings.Security()
	km, err := keyMaterial(ctx, "roots", info.Store.Roots, sc.RootInstance, sc.RootCertName)
	if err != nil {
		return nil, err
	}
	if km.Roots == nil { // never the system's roots in their place
		return nil, fmt.Errorf("roots: certificate provider instance %q gives no root certificates", sc.RootInstance)
	}
	return km.Roots, nil
}

// identityOf returns the certificate chain and key of the cluster's
// identity provider instance.
func identityOf(ctx context.Context, info *handshake.Info) ([]tls.Certificate, error) {
	sc := info.Settings.Security()
	km, err := keyMaterial(ctx, "identity", info.Store.Identity, sc.IdentityInstance, sc.IdentityCertName)
	if err != nil {
		return nil, err
	}
	if len(km.Certs) == 0 {
		return nil, fmt.Errorf("identity: certificate provider instance %q gives no certificate", sc.IdentityInstance)
	}
	return km.Certs, nil
}

// keyMaterial returns the current key material of the source that
// source gives for instance and certName; errors start with use.
func keyMaterial(ctx context.Context, use string, source func(instance, certName string) (certstore.Source, error), instance, certName string) (*certprovider.KeyMaterial, error) {
	src, err := source(instance, certName)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", use, err)
	}
	km, err := src.KeyMaterial(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", use, err)
	}
	return km, nil
}

// serverName is the name sent in the handshake (gRFC A101): the
// endpoint's hostname, without its port, when the cluster says
// auto_host_sni and the endpoint has one; else the cluster's sni; else
// none.
func serverName(sc *security.Config, hostname string) string {
	if sc.AutoHostSNI && hostname != "" {
		if host, _, err := net.SplitHostPort(hostname); err == nil {
			return host
		}
		return strings.TrimSuffix(strings.TrimPrefix(hostname, "["), "]")
	}
	return sc.SNI
}

// spiffeID returns the SPIFFE ID of the peer's leaf certificate, by gRPC
// C-core's rules (package certsan); nil when it has none.
func spiffeID(state tls.ConnectionState) *url.URL {
	if len(state.PeerCertificates) == 0 {
		return nil
	}
	_, u := certsan.SPIFFEID(state.PeerCertificates[0])
	return u
}
