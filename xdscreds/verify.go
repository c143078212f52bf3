package xdscreds

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/xdslens/xdslens/internal/asciifold"
	"github.com/xdslens/xdslens/internal/certsan"
	"github.com/xdslens/xdslens/internal/xdsmatch"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"
)

// verifier checks the server's certificate in one handshake: its chain
// against the cluster's roots, then its SANs.
type verifier struct {
	sc *security.Config
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
	return checkSANs(sans, v.sc.SANMatchers)
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
	for _, san := range s.DNS {
		if dnsMatch(san, v.serverName) {
			return nil
		}
	}
	return fmt.Errorf("auto_sni_san_validation: no DNS SAN of the server's certificate matches the server name %s (DNS SANs %s)", quote(v.serverName), list(s.DNS))
}

// checkSANs applies match_subject_alt_names (gRFC A29): with no matcher
// any certificate is accepted; else one of its URI, IP or DNS SANs must
// match one of the matchers.
func checkSANs(s certsan.SANs, matchers []matcher.String) error {
	if len(matchers) == 0 {
		return nil
	}
	for _, m := range matchers {
		cm, err := compileSAN(m)
		if err != nil {
			return err
		}
		if cm.anyOf(s.URI, false) || cm.anyOf(s.IP, false) || cm.anyOf(s.DNS, true) {
			return nil
		}
	}
	return fmt.Errorf("no SAN of the server's certificate (URI %s, IP %s, DNS %s) matches match_subject_alt_names %s",
		list(s.URI), list(s.IP), list(s.DNS), listed(len(matchers), func(i int) string { return describe(matchers[i]) }))
}

// sanMatcher is a matcher of match_subject_alt_names, compiled.
type sanMatcher struct {
	src matcher.String
	str xdsmatch.String
}

// compileSAN compiles m.
func compileSAN(m matcher.String) (sanMatcher, error) {
	s, err := xdsmatch.CompileString(m)
	if err != nil {
		return sanMatcher{}, fmt.Errorf("match_subject_alt_names: %s: %v", describe(m), err)
	}
	return sanMatcher{src: m, str: s}, nil
}

// anyOf reports whether one of sans matches. An exact matcher compares
// DNS SANs by the DNS rules (dnsMatch), without case and with wildcards,
// as the xDS API says and gRPC does; every other comparison is of strings.
func (m *sanMatcher) anyOf(sans []string, dns bool) bool {
	for _, san := range sans {
		if dns && m.src.Kind == matcher.Exact {
			if dnsMatch(san, m.src.Value) {
				return true
			}
			continue
		}
		if m.str.Match(san) {
			return true
		}
	}
	return false
}

// dnsMatch reports whether the DNS SAN san, which may be a wildcard
// pattern, matches the name name, as gRPC C-core's
// VerifySubjectAlternativeName does: neither may be empty or start with a
// dot; both are taken as absolute (a trailing dot added) and compared
// without case; a wildcard is "*" as the whole leftmost label of a name
// of at least two labels, and stands for exactly one label.
func dnsMatch(san, name string) bool {
	if san == "" || name == "" || san[0] == '.' || name[0] == '.' {
		return false
	}
	san, name = absolute(asciifold.Lower(san)), absolute(asciifold.Lower(name))
	if !strings.Contains(san, "*") {
		return san == name
	}
	if !strings.HasPrefix(san, "*.") || san == "*." {
		return false
	}
	suffix := san[1:] // ".example.com."
	if strings.Contains(suffix, "*") || !strings.HasSuffix(name, suffix) {
		return false
	}
	label := name[:len(name)-len(suffix)]
	return label != "" && !strings.Contains(label, ".")
}

// absolute returns name with a trailing dot.
func absolute(name string) string {
	if strings.HasSuffix(name, ".") {
		return name
	}
	return name + "."
}
