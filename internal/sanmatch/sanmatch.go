// Package sanmatch decides whether the certificate of a TLS server carries
// the names its cluster asks for: one of the UpstreamTlsContext's
// match_subject_alt_names (gRFC A29), or, with auto_sni_san_validation,
// the server name sent (gRFC A101). It is the SAN check of package
// xdscreds, apart from the chain's verification.
//
// The matchers are compiled once per config of the cluster (Compile,
// which package handshake calls when the cluster policy takes a config of
// the cluster), as C-core compiles them once, when it parses the Cluster
// (StringMatcher::Create in src/core/util/matchers.cc), and matched at
// every handshake: a compiled Matchers is immutable, shared by the
// concurrent handshakes of every endpoint of the cluster, and a new config
// compiles new ones. A regular expression that does not compile cannot
// reach Compile from a resource: the Cluster is NACKed when it is parsed
// (package security); Compile still fails on one, naming the matcher.
//
//	| matcher | compared with | after |
//	|---|---|---|
//	| exact, on a DNS SAN | DNS rules: without case, trailing dots ignored, a SAN "*.example.com" matches one label in place of "*", no empty name or leading dot | C-core's VerifySubjectAlternativeName |
//	| exact on URI and IP SANs; prefix, suffix, contains and safe_regex on any SAN | the SAN as the certificate spells it (package internal/xdsmatch); ignore_case folds ASCII case; safe_regex matches the whole SAN | grpc-go |
//	| the server name of auto_sni_san_validation | the DNS SANs only, by the DNS rules of an exact matcher | A101; C-core |
//
// Errors list what did not match, bounded (at most 8 SANs or matchers, 256
// bytes of each), so that a certificate of many long SANs cannot make a
// huge status message.
package sanmatch

import (
	"fmt"
	"strings"

	"github.com/xdslens/xdslens/internal/asciifold"
	"github.com/xdslens/xdslens/internal/certsan"
	"github.com/xdslens/xdslens/internal/xdsmatch"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
)

// Matchers are the match_subject_alt_names of one TLS config, compiled.
// The zero Matchers, like Compile(nil), has no matcher and accepts every
// certificate.
type Matchers struct {
	ms []compiled
}

// compiled is one matcher, with the value it was compiled from.
type compiled struct {
	src matcher.String
	str xdsmatch.String
}

// Compile compiles ms, in order. It fails on a matcher that is not a
// string match's, or a regular expression that is not valid as written,
// naming the matcher by its index and value.
func Compile(ms []matcher.String) (*Matchers, error) {
	out := &Matchers{ms: make([]compiled, len(ms))}
	for i, m := range ms {
		s, err := xdsmatch.CompileString(m)
		if err != nil {
			return nil, fmt.Errorf("match_subject_alt_names[%d]: %s: %v", i, describe(m), err)
		}
		out.ms[i] = compiled{src: m, str: s}
	}
	return out, nil
}

// Check reports nil when s satisfies the matchers: always when there are
// none; else when one URI, IP or DNS SAN matches one matcher. Otherwise
// the error lists the SANs and the matchers.
func (m *Matchers) Check(s certsan.SANs) error {
	if len(m.ms) == 0 {
		return nil
	}
	for i := range m.ms {
		c := &m.ms[i]
		if c.anyOf(s.URI, false) || c.anyOf(s.IP, false) || c.anyOf(s.DNS, true) {
			return nil
		}
	}
	return fmt.Errorf("no SAN of the server's certificate (URI %s, IP %s, DNS %s) matches match_subject_alt_names %s",
		list(s.URI), list(s.IP), list(s.DNS), listed(len(m.ms), func(i int) string { return describe(m.ms[i].src) }))
}

// anyOf reports whether one of sans matches. An exact matcher compares
// DNS SANs by the DNS rules (dnsMatch), without case and with wildcards,
// as the xDS API says and gRPC does; every other comparison is of strings.
func (c *compiled) anyOf(sans []string, dns bool) bool {
	for _, san := range sans {
		if dns && c.src.Kind == matcher.Exact {
			if dnsMatch(san, c.src.Value) {
				return true
			}
			continue
		}
		if c.str.Match(san) {
			return true
		}
	}
	return false
}

// CheckServerName applies auto_sni_san_validation (gRFC A101): nil when a
// DNS SAN of s matches name, by the DNS rules of an exact matcher. An
// empty name matches nothing.
func CheckServerName(s certsan.SANs, name string) error {
	for _, san := range s.DNS {
		if dnsMatch(san, name) {
			return nil
		}
	}
	return fmt.Errorf("auto_sni_san_validation: no DNS SAN of the server's certificate matches the server name %s (DNS SANs %s)", quote(name), list(s.DNS))
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
