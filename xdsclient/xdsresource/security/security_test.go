package security_test

import (
	"reflect"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// socket returns the TLS transport socket holding ctx.
func socket(t *testing.T, ctx proto.Message) *corev3.TransportSocket {
	t.Helper()
	a, err := anypb.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return &corev3.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: a}}
}

// instance names a certificate provider instance.
func instance(name string) *tlsv3.CertificateProviderPluginInstance {
	return &tlsv3.CertificateProviderPluginInstance{InstanceName: name, CertificateName: name + "-cert"}
}

// roots is a validation context that checks the peer against instance
// name, and the SANs of sans.
func roots(name string, sans ...*matcherv3.StringMatcher) *tlsv3.CommonTlsContext_ValidationContext {
	return &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
		CaCertificateProviderInstance: instance(name), MatchSubjectAltNames: sans,
	}}
}

// known is a bootstrap that has the instances "roots" and "identity".
func known(name string) bool { return name == "roots" || name == "identity" }

// TestUpstream: a Cluster's TLS context becomes a Config with the
// instances, SAN matchers and SNI it names; what gRPC rejects is named by
// its path.
func TestUpstream(t *testing.T) {
	if c, err := security.Upstream(nil, known); c != nil || err != nil {
		t.Errorf("Upstream(nil) = %+v, %v; want plaintext: nil, nil", c, err)
	}
	exact := &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "spiffe://a"}}
	c, err := security.Upstream(socket(t, &tlsv3.UpstreamTlsContext{
		CommonTlsContext: &tlsv3.CommonTlsContext{
			TlsCertificateProviderInstance: instance("identity"),
			ValidationContextType:          roots("roots", exact),
		},
		Sni:         "backend.example.com",
		AutoHostSni: true,
	}), known)
	if err != nil {
		t.Fatal(err)
	}
	want := security.Config{IdentityInstance: "identity", IdentityCertName: "identity-cert", RootInstance: "roots", RootCertName: "roots-cert",
		SNI: "backend.example.com", AutoHostSNI: true}
	if len(c.SANMatchers) != 1 || c.SANMatchers[0] != (matcher.String{Kind: matcher.Exact, Value: "spiffe://a"}) {
		t.Errorf("SANMatchers = %+v, want the exact spiffe://a", c.SANMatchers)
	}
	c.SANMatchers = nil
	if !reflect.DeepEqual(*c, want) {
		t.Errorf("Upstream = %+v, want %+v", *c, want)
	}

	for _, tc := range []struct {
		name        string
		ctx         *tlsv3.UpstreamTlsContext
		hasProvider func(string) bool
		want        string
	}{
		{"an instance the bootstrap does not have", &tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{ValidationContextType: roots("other")}}, known,
			`typed_config.common_tls_context.validation_context.ca_certificate_provider_instance.instance_name: "other" is not in the bootstrap's certificate_providers`},
		{"a bootstrap without instances", &tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{ValidationContextType: roots("roots")}}, nil,
			`typed_config.common_tls_context.validation_context.ca_certificate_provider_instance.instance_name: "roots" is not in the bootstrap's certificate_providers`},
		{"no roots", &tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{}}, known,
			"typed_config.common_tls_context.validation_context: missing, a client needs ca_certificate_provider_instance or system_root_certs"},
		{"a long SNI", &tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{ValidationContextType: roots("roots")}, Sni: strings.Repeat("a", 256)}, known,
			"typed_config.sni: 256 bytes, at most 255 are allowed"},
		{"a key inline", &tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{TlsCertificates: []*tlsv3.TlsCertificate{{}}}}, known,
			"typed_config.common_tls_context.tls_certificates: not supported, use tls_certificate_provider_instance"},
	} {
		if _, err := security.Upstream(socket(t, tc.ctx), tc.hasProvider); err == nil || err.Error() != tc.want {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := security.Upstream(socket(t, &tlsv3.DownstreamTlsContext{}), known); err == nil || !strings.HasSuffix(err.Error(), "want envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext") {
		t.Errorf("a DownstreamTlsContext on a cluster: %v, want an error naming UpstreamTlsContext", err)
	}
}

// TestDownstream: a server's TLS context needs an identity, and roots when
// it requires client certificates.
func TestDownstream(t *testing.T) {
	c, err := security.Downstream(socket(t, &tlsv3.DownstreamTlsContext{
		CommonTlsContext:         &tlsv3.CommonTlsContext{TlsCertificateProviderInstance: instance("identity"), ValidationContextType: roots("roots")},
		RequireClientCertificate: wrapperspb.Bool(true),
	}), known)
	if err != nil {
		t.Fatal(err)
	}
	if want := (security.Config{IdentityInstance: "identity", IdentityCertName: "identity-cert", RootInstance: "roots", RootCertName: "roots-cert", RequireClientCert: true}); !reflect.DeepEqual(*c, want) {
		t.Errorf("Downstream = %+v, want %+v", *c, want)
	}
	// As in gRPC C-core, a server whose validation context has no roots
	// asks for no client certificate.
	c, err = security.Downstream(socket(t, &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsCertificateProviderInstance: instance("identity"),
		ValidationContextType:          &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{}},
	}}), known)
	if err != nil || c.RootInstance != "" || c.RequireClientCert {
		t.Errorf("a validation context without roots: %+v, %v; want no roots, no client certificate required", c, err)
	}
	for _, tc := range []struct {
		name string
		ctx  *tlsv3.DownstreamTlsContext
		want string
	}{
		{"no identity", &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{}},
			"typed_config.common_tls_context.tls_certificate_provider_instance: missing, a server needs an identity certificate"},
		{"client certificates without roots", &tlsv3.DownstreamTlsContext{
			CommonTlsContext:         &tlsv3.CommonTlsContext{TlsCertificateProviderInstance: instance("identity")},
			RequireClientCertificate: wrapperspb.Bool(true),
		}, "typed_config.require_client_certificate: true, but common_tls_context has no ca_certificate_provider_instance"},
		{"client certificates, a validation context without roots", &tlsv3.DownstreamTlsContext{
			CommonTlsContext: &tlsv3.CommonTlsContext{TlsCertificateProviderInstance: instance("identity"),
				ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{}}},
			RequireClientCertificate: wrapperspb.Bool(true),
		}, "typed_config.require_client_certificate: true, but common_tls_context has no ca_certificate_provider_instance"},
		{"system roots on a server", &tlsv3.DownstreamTlsContext{
			CommonTlsContext: &tlsv3.CommonTlsContext{TlsCertificateProviderInstance: instance("identity"),
				ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{SystemRootCerts: &tlsv3.CertificateValidationContext_SystemRootCerts{}}}},
		}, "typed_config.common_tls_context.validation_context.system_root_certs: not supported on servers, use ca_certificate_provider_instance"},
		{"SAN matchers on a server", &tlsv3.DownstreamTlsContext{
			CommonTlsContext: &tlsv3.CommonTlsContext{TlsCertificateProviderInstance: instance("identity"),
				ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
					CaCertificateProviderInstance: instance("roots"),
					MatchSubjectAltNames:          []*matcherv3.StringMatcher{{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "spiffe://td/x"}}},
				}}},
		}, "typed_config.common_tls_context.validation_context.match_subject_alt_names: not supported on servers"},
		{"a provider instance the bootstrap lacks", &tlsv3.DownstreamTlsContext{
			CommonTlsContext: &tlsv3.CommonTlsContext{TlsCertificateProviderInstance: instance("nowhere")},
		}, `typed_config.common_tls_context.tls_certificate_provider_instance.instance_name: "nowhere" is not in the bootstrap's certificate_providers`},
		{"session ticket keys", &tlsv3.DownstreamTlsContext{SessionTicketKeysType: &tlsv3.DownstreamTlsContext_SessionTicketKeys{}},
			"typed_config.session_ticket_keys: not supported: session ticket keys are secrets, which gRPC does not take from a control plane"},
	} {
		if _, err := security.Downstream(socket(t, tc.ctx), known); err == nil || err.Error() != tc.want {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestCheckSocketSecrets: a filter chain's socket that carries a secret is
// reported whatever else it holds; one without is not.
func TestCheckSocketSecrets(t *testing.T) {
	if err := security.CheckSocketSecrets(nil); err != nil {
		t.Errorf("no socket: %v", err)
	}
	clean := socket(t, &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{TlsCertificateProviderInstance: instance("unknown")}})
	if err := security.CheckSocketSecrets(clean); err != nil {
		t.Errorf("a socket without a secret (and an instance no bootstrap has, which is not this check's): %v", err)
	}
	key := &tlsv3.TlsCertificate{PrivateKey: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "KEY"}}}
	withKey := socket(t, &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{TlsCertificates: []*tlsv3.TlsCertificate{key}}})
	const want = "typed_config.common_tls_context.tls_certificates: not supported, use tls_certificate_provider_instance"
	if err := security.CheckSocketSecrets(withKey); err == nil || err.Error() != want {
		t.Errorf("a socket with a private key: %v, want %q", err, want)
	}
}
