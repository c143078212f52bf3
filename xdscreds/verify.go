package xdscreds

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/xdslens/xdslens/internal/asciifold"
	"github.com/xdslens/xdslens/internal/certsan"
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
		cm, err := compileMatcher(m)
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

// sanMatcher is a StringMatcher ready to match SANs.
type sanMatcher struct {
	matcher.String
	re *regexp.Regexp
}

// compileMatcher compiles m's regex; the value of the others is lower
// cased when they ignore case.
func compileMatcher(m matcher.String) (sanMatcher, error) {
	cm := sanMatcher{String: m}
	switch {
	case m.Kind == matcher.Regex:
		re, err := regexp.Compile(`^(?:` + m.Value + `)$`)
		if err != nil {
			return cm, fmt.Errorf("match_subject_alt_names: %s: %v", describe(m), err)
		}
		cm.re = re
	case m.IgnoreCase:
		cm.Value = asciifold.Lower(m.Value)
	}
	return cm, nil
}

// anyOf reports whether one of sans matches. An exact matcher compares
// DNS SANs by the DNS rules (dnsMatch), without case and with wildcards,
// as the xDS API says and gRPC does; every other comparison is of strings.
func (m sanMatcher) anyOf(sans []string, dns bool) bool {
	for _, san := range sans {
		if dns && m.Kind == matcher.Exact {
			if dnsMatch(san, m.Value) {
				return true
			}
			continue
		}
		if m.match(san) {
			return true
		}
	}
	return false
}

// match compares s with the matcher's value.
func (m sanMatcher) match(s string) bool {
	if m.re != nil {
		return m.re.MatchString(s)
	}
	if m.IgnoreCase {
		s = asciifold.Lower(s)
	}
	switch m.Kind {
	case matcher.Exact:
		return s == m.Value
	case matcher.Prefix:
		return strings.HasPrefix(s, m.Value)
	case matcher.Suffix:
		return strings.HasSuffix(s, m.Value)
	case matcher.Contains:
		return strings.Contains(s, m.Value)
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
