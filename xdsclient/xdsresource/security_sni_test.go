package xdsresource

import (
	"strings"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
)

// systemRoots is a validation context that asks for the system's roots.
func systemRoots(sans ...*matcherv3.StringMatcher) *tlsv3.CertificateValidationContext {
	return &tlsv3.CertificateValidationContext{
		SystemRootCerts:      &tlsv3.CertificateValidationContext_SystemRootCerts{},
		MatchSubjectAltNames: sans,
	}
}

// gRFC A101 (sni, auto_host_sni, auto_sni_san_validation) and A82
// (system_root_certs) on clusters.
func TestClusterSecuritySNIAndSystemRoots(t *testing.T) {
	exact := &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "a"}}
	runSecurityCases(t, []securityCase{
		{"sni", &tlsv3.UpstreamTlsContext{CommonTlsContext: upstream(nil).CommonTlsContext, Sni: "api.example.com"},
			&security.Config{RootInstance: "roots", RootCertName: "ca", SNI: "api.example.com"}},
		{"sni of 255 bytes", &tlsv3.UpstreamTlsContext{CommonTlsContext: upstream(nil).CommonTlsContext, Sni: strings.Repeat("a", 255)},
			&security.Config{RootInstance: "roots", RootCertName: "ca", SNI: strings.Repeat("a", 255)}},
		{"auto_host_sni and auto_sni_san_validation", &tlsv3.UpstreamTlsContext{CommonTlsContext: upstream(nil).CommonTlsContext,
			Sni: "fallback.example.com", AutoHostSni: true, AutoSniSanValidation: true},
			&security.Config{RootInstance: "roots", RootCertName: "ca", SNI: "fallback.example.com", AutoHostSNI: true, AutoSNISANValidation: true}},
		{"system roots", upstream(func(c *tlsv3.CommonTlsContext) {
			c.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: systemRoots(exact)}
		}), &security.Config{SystemRootCerts: true, SANMatchers: []matcher.String{{Kind: matcher.Exact, Value: "a"}}}},
		{"system roots with an identity", upstream(func(c *tlsv3.CommonTlsContext) {
			c.TlsCertificateProviderInstance = provider("identity", "id")
			c.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: systemRoots()}
		}), &security.Config{IdentityInstance: "identity", IdentityCertName: "id", SystemRootCerts: true}},
		{"system roots in combined_validation_context", upstream(func(c *tlsv3.CommonTlsContext) {
			c.ValidationContextType = &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
				DefaultValidationContext: systemRoots(),
			}}
		}), &security.Config{SystemRootCerts: true}},
		{"a provider instance wins over system roots", upstream(func(c *tlsv3.CommonTlsContext) {
			vc := systemRoots()
			vc.CaCertificateProviderInstance = provider("roots", "ca")
			c.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: vc}
		}), &security.Config{RootInstance: "roots", RootCertName: "ca"}},
		{"a deprecated provider instance wins over system roots", upstream(func(c *tlsv3.CommonTlsContext) {
			c.ValidationContextType = &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
				DefaultValidationContext:                     systemRoots(),
				ValidationContextCertificateProviderInstance: deprecatedInstance("roots", "old"),
			}}
		}), &security.Config{RootInstance: "roots", RootCertName: "old"}},
	})

	with := func(u *tlsv3.UpstreamTlsContext) func() proto.Message {
		return func() proto.Message {
			m := edsCluster()
			m.TransportSocket = tlsSocket(t, u)
			return m
		}
	}
	const at = `cds "c1": transport_socket.typed_config.`
	runErrorCases(t, ClusterType, "c1", []errorCase{
		{name: "sni of 256 bytes", build: with(&tlsv3.UpstreamTlsContext{CommonTlsContext: upstream(nil).CommonTlsContext, Sni: strings.Repeat("a", 256)}),
			want: at + `sni: 256 bytes, at most 255 are allowed`},
		{name: "regex SAN matcher with ignore_case", build: with(upstream(func(c *tlsv3.CommonTlsContext) {
			c.ValidationContextType = caContext("roots", exact, &matcherv3.StringMatcher{
				MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "a.*"}}, IgnoreCase: true})
		})), want: at + `common_tls_context.validation_context.match_subject_alt_names[1].ignore_case: not supported with safe_regex`},
		{name: "neither provider instance nor system roots", build: with(upstream(func(c *tlsv3.CommonTlsContext) {
			c.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
				MatchSubjectAltNames: []*matcherv3.StringMatcher{exact}}}
		})), want: at + `common_tls_context.validation_context.ca_certificate_provider_instance: missing`},
	})
}

// gRFC A82: system_root_certs is for clients only.
func TestServerSecuritySystemRootsRejected(t *testing.T) {
	m := serverLis(chain(t, "c", nil))
	m.FilterChains[0].TransportSocket = tlsSocket(t, &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsCertificateProviderInstance: provider("identity", ""),
		ValidationContextType:          &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: systemRoots()},
	}})
	_, _, err := decode(t, ListenerType, m)
	const want = `transport_socket.typed_config.common_tls_context.validation_context.system_root_certs: not supported on servers, use ca_certificate_provider_instance`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Decode error = %v, want one containing %q", err, want)
	}
}
