package xdscreds

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/xdslens/xdslens/internal/certsan"
	"github.com/xdslens/xdslens/internal/sanmatch"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"
)

// verifier checks the server's certificate in one handshake: its chain
// against the cluster's roots, then its SANs.
type verifier struct {
	sc *security.Config
	// sans are sc's SAN matchers, compiled with the cluster's config
	// (handshake.Settings), not at each handshake.
	sans *sanmatch.Matchers
	// roots are the provider's roots; nil with sc.SystemRootCerts, for the
	// system's.
	roots *x509.CertPool
	// serverName is the name sent in the handshake, "" for none.
	serverName string
}

// verify is the tls.Config's VerifyConnection.
func (v *verifier) verify(state tls.ConnectionState) error {
	certs := state.PeerCertificates
	if len(certs) == 0 {
		return errors.New("the server presented no certificate")
	}
	opts := x509.VerifyOptions{
		Roots:         v.roots,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := certs[0].Verify(opts); err != nil {
		return fmt.Errorf("the server's certificate does not verify against %s: %w", v.rootsName(), err)
	}
	sans := certsan.Of(certs[0])
	if v.sc.AutoSNISANValidation {
		return v.checkServerName(sans)
	}
	return v.sans.Check(sans)
}

// rootsName says where the roots come from.
func (v *verifier) rootsName() string {
	if v.sc.SystemRootCerts {
		return "the system's roots"
	}
	return fmt.Sprintf("the roots of certificate provider instance %q", v.sc.RootInstance)
}

// checkServerName applies auto_sni_san_validation (gRFC A101): a DNS SAN
// must match the server name sent, by the DNS rules of an exact matcher.
// With no name sent, nothing can match, and the handshake fails, as in
// C-core.
func (v *verifier) checkServerName(s certsan.SANs) error {
	if v.serverName == "" {
		return errors.New("auto_sni_san_validation: no server name was sent to check the certificate against (the cluster has no sni, and auto_host_sni found no endpoint hostname)")
	}
	return sanmatch.CheckServerName(s, v.serverName)
}
