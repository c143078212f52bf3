package xdsresource

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"

	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// provider returns a CertificateProviderPluginInstance.
func provider(instance, cert string) *tlsv3.CertificateProviderPluginInstance {
	return &tlsv3.CertificateProviderPluginInstance{InstanceName: instance, CertificateName: cert}
}

// caContext is a validation context whose roots come from instance.
func caContext(instance string, sans ...*matcherv3.StringMatcher) *tlsv3.CommonTlsContext_ValidationContext {
	return &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
		CaCertificateProviderInstance: provider(instance, "ca"),
		MatchSubjectAltNames:          sans,
	}}
}

// tlsSocket wraps a TLS context in a transport_socket.
func tlsSocket(t testing.TB, ctx proto.Message) *corev3.TransportSocket {
	return &corev3.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: toAny(t, ctx)}}
}

// upstream returns an UpstreamTlsContext with roots from "roots" and the
// given changes made to its CommonTlsContext.
func upstream(change func(c *tlsv3.CommonTlsContext)) *tlsv3.UpstreamTlsContext {
	c := &tlsv3.CommonTlsContext{ValidationContextType: caContext("roots")}
	if change != nil {
		change(c)
	}
	return &tlsv3.UpstreamTlsContext{CommonTlsContext: c}
}

// securityCase is an UpstreamTlsContext and the security.Config a cluster
// with it gets.
type securityCase struct {
	name string
	ctx  *tlsv3.UpstreamTlsContext
	want *security.Config
}

// runSecurityCases decodes an EDS cluster with each case's TLS context.
func runSecurityCases(t *testing.T, tests []securityCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := edsCluster()
			m.TransportSocket = tlsSocket(t, tt.ctx)
			_, v, err := decode(t, ClusterType, m)
			if err != nil {
				t.Fatal(err)
			}
			if got := v.(*Cluster).Security; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Security = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestClusterSecurity(t *testing.T) {
	runSecurityCases(t, []securityCase{
		{"roots only", upstream(nil), &security.Config{RootInstance: "roots", RootCertName: "ca"}},
		{"mutual TLS with SAN matchers", upstream(func(c *tlsv3.CommonTlsContext) {
			c.TlsCertificateProviderInstance = provider("identity", "id")
			c.ValidationContextType = caContext("roots",
				&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "spiffe://a/b"}},
				&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: "x"}, IgnoreCase: true})
		}), &security.Config{IdentityInstance: "identity", IdentityCertName: "id", RootInstance: "roots", RootCertName: "ca",
			SANMatchers: []matcher.String{{Kind: matcher.Exact, Value: "spiffe://a/b"}, {Kind: matcher.Prefix, Value: "x", IgnoreCase: true}}}},
		// Empty values are valid, as in C-core (StringMatcherParse and
		// StringMatcher::Create): an empty exact matches no SAN, an empty
		// prefix, suffix or contains every SAN.
		{"SAN matchers with empty values", upstream(func(c *tlsv3.CommonTlsContext) {
			c.ValidationContextType = caContext("roots",
				&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{}},
				&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{}},
				&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Suffix{}, IgnoreCase: true},
				&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Contains{}})
		}), &security.Config{RootInstance: "roots", RootCertName: "ca", SANMatchers: []matcher.String{
			{Kind: matcher.Exact}, {Kind: matcher.Prefix}, {Kind: matcher.Suffix, IgnoreCase: true}, {Kind: matcher.Contains}}}},
		{"combined validation context", upstream(func(c *tlsv3.CommonTlsContext) {
			c.ValidationContextType = &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
				DefaultValidationContext: &tlsv3.CertificateValidationContext{CaCertificateProviderInstance: provider("roots", "")},
			}}
		}), &security.Config{RootInstance: "roots"}},
		{"ignored fields", upstream(func(c *tlsv3.CommonTlsContext) {
			c.AlpnProtocols = []string{"h2"}
			c.GetValidationContext().AllowExpiredCertificate = true
		}), &security.Config{RootInstance: "roots", RootCertName: "ca"}},
	})

	_, v, err := decode(t, ClusterType, edsCluster())
	if err != nil || v.(*Cluster).Security != nil {
		t.Errorf("plaintext cluster: Security = %+v, err %v, want nil", v, err)
	}
}

func TestClusterSecurityErrors(t *testing.T) {
	with := func(ts func(t *testing.T) *corev3.TransportSocket) func() proto.Message {
		return func() proto.Message {
			m := edsCluster()
			m.TransportSocket = ts(t)
			return m
		}
	}
	ctx := func(change func(c *tlsv3.CommonTlsContext)) func() proto.Message {
		return with(func(t *testing.T) *corev3.TransportSocket { return tlsSocket(t, upstream(change)) })
	}
	const at = `cds "c1": transport_socket.typed_config.common_tls_context.`
	runErrorCases(t, ClusterType, "c1", []errorCase{
		{name: "no typed_config", build: with(func(t *testing.T) *corev3.TransportSocket {
			return &corev3.TransportSocket{Name: "envoy.transport_sockets.tls"}
		}), want: `cds "c1": transport_socket.typed_config: not set`},
		{name: "empty type_url", build: with(func(t *testing.T) *corev3.TransportSocket {
			ts := tlsSocket(t, upstream(nil))
			ts.GetTypedConfig().TypeUrl = ""
			return ts
		}), want: `cds "c1": transport_socket.typed_config.type_url: not set`},
		{name: "type_url without a prefix", build: with(func(t *testing.T) *corev3.TransportSocket {
			ts := tlsSocket(t, upstream(nil))
			ts.GetTypedConfig().TypeUrl = "envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"
			return ts
		}), want: `cds "c1": transport_socket.typed_config.type_url: "envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext" names no type (want PREFIX/TYPE)`},
		{name: "type_url ending in a slash", build: with(func(t *testing.T) *corev3.TransportSocket {
			ts := tlsSocket(t, upstream(nil))
			ts.GetTypedConfig().TypeUrl = "type.googleapis.com/"
			return ts
		}), want: `cds "c1": transport_socket.typed_config.type_url: "type.googleapis.com/" names no type (want PREFIX/TYPE)`},
		{name: "context in a TypedStruct", build: with(func(t *testing.T) *corev3.TransportSocket {
			return tlsSocket(t, &xdstypev3.TypedStruct{TypeUrl: security.UpstreamTLSContextTypeURL})
		}), want: `cds "c1": transport_socket.typed_config: type "type.googleapis.com/xds.type.v3.TypedStruct" is not supported, want envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext`},
		{name: "downstream context on a cluster", build: with(func(t *testing.T) *corev3.TransportSocket {
			return tlsSocket(t, &tlsv3.DownstreamTlsContext{})
		}), want: `cds "c1": transport_socket.typed_config: type "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext" is not supported, want envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext`},
		{name: "no common_tls_context", build: with(func(t *testing.T) *corev3.TransportSocket {
			return tlsSocket(t, &tlsv3.UpstreamTlsContext{Sni: "x"})
		}), want: `cds "c1": transport_socket.typed_config.common_tls_context: missing`},
		{name: "inline certificate and key", build: ctx(func(c *tlsv3.CommonTlsContext) {
			c.TlsCertificates = []*tlsv3.TlsCertificate{{PrivateKey: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "KEY"}}}}
		}), want: at + `tls_certificates: not supported, use tls_certificate_provider_instance`},
		{name: "sds certificates", build: ctx(func(c *tlsv3.CommonTlsContext) {
			c.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{{Name: "s"}}
		}), want: at + `tls_certificate_sds_secret_configs: not supported, use tls_certificate_provider_instance`},
		{name: "sds validation context", build: ctx(func(c *tlsv3.CommonTlsContext) {
			c.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContextSdsSecretConfig{ValidationContextSdsSecretConfig: &tlsv3.SdsSecretConfig{Name: "s"}}
		}), want: at + `validation_context_sds_secret_config: not supported, use validation_context.ca_certificate_provider_instance`},
		{name: "tls_params", build: ctx(func(c *tlsv3.CommonTlsContext) { c.TlsParams = &tlsv3.TlsParameters{} }),
			want: at + `tls_params: not supported`},
		{name: "custom_handshaker", build: ctx(func(c *tlsv3.CommonTlsContext) { c.CustomHandshaker = &corev3.TypedExtensionConfig{Name: "h"} }),
			want: at + `custom_handshaker: not supported`},
		{name: "no validation context", build: ctx(func(c *tlsv3.CommonTlsContext) { c.ValidationContextType = nil }),
			want: at + `validation_context: missing, a client needs ca_certificate_provider_instance or system_root_certs`},
		{name: "no ca provider", build: ctx(func(c *tlsv3.CommonTlsContext) {
			c.GetValidationContext().CaCertificateProviderInstance = nil
		}), want: at + `validation_context.ca_certificate_provider_instance: missing`},
		{name: "unknown root instance", build: ctx(func(c *tlsv3.CommonTlsContext) { c.ValidationContextType = caContext("nope") }),
			want: at + `validation_context.ca_certificate_provider_instance.instance_name: "nope" is not in the bootstrap's certificate_providers`},
		{name: "unknown identity instance", build: ctx(func(c *tlsv3.CommonTlsContext) { c.TlsCertificateProviderInstance = provider("nope", "") }),
			want: at + `tls_certificate_provider_instance.instance_name: "nope" is not in the bootstrap's certificate_providers`},
		{name: "empty identity instance", build: ctx(func(c *tlsv3.CommonTlsContext) { c.TlsCertificateProviderInstance = provider("", "x") }),
			want: at + `tls_certificate_provider_instance.instance_name: empty`},
		{name: "verify_certificate_spki", build: ctx(func(c *tlsv3.CommonTlsContext) { c.GetValidationContext().VerifyCertificateSpki = []string{"x"} }),
			want: at + `validation_context.verify_certificate_spki: not supported`},
		{name: "verify_certificate_hash", build: ctx(func(c *tlsv3.CommonTlsContext) { c.GetValidationContext().VerifyCertificateHash = []string{"x"} }),
			want: at + `validation_context.verify_certificate_hash: not supported`},
		{name: "require_signed_certificate_timestamp", build: ctx(func(c *tlsv3.CommonTlsContext) {
			c.GetValidationContext().RequireSignedCertificateTimestamp = wrapperspb.Bool(true)
		}), want: at + `validation_context.require_signed_certificate_timestamp: not supported`},
		{name: "crl", build: ctx(func(c *tlsv3.CommonTlsContext) {
			c.GetValidationContext().Crl = &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: "crl"}}
		}), want: at + `validation_context.crl: not supported`},
		{name: "custom_validator_config", build: ctx(func(c *tlsv3.CommonTlsContext) {
			c.GetValidationContext().CustomValidatorConfig = &corev3.TypedExtensionConfig{Name: "v"}
		}), want: at + `validation_context.custom_validator_config: not supported`},
		{name: "bad SAN regex", build: ctx(func(c *tlsv3.CommonTlsContext) {
			c.ValidationContextType = caContext("roots", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "("}}})
		}), want: at + `validation_context.match_subject_alt_names[0]: invalid regex "(": `, prefix: true},
		// Valid as written, but nested one level short of Go's limit: it
		// cannot be compiled anchored, as SAN matchers are run.
		{name: "SAN regex that cannot be anchored", build: ctx(func(c *tlsv3.CommonTlsContext) {
			c.ValidationContextType = caContext("roots", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: deepRegex}}})
		}), want: at + `validation_context.match_subject_alt_names[0]: invalid regex ` + strconv.Quote(deepRegex) + `: anchored to match whole values: expression nests too deeply`},
		{name: "SAN matcher without pattern", build: ctx(func(c *tlsv3.CommonTlsContext) {
			c.ValidationContextType = caContext("roots", &matcherv3.StringMatcher{})
		}), want: at + `validation_context.match_subject_alt_names[0]: no match pattern is set`},
	})
}

// As in gRPC C-core, a cluster's transport socket is known by the type of
// its typed_config, under any type URL prefix; its name is not read.
func TestClusterSecuritySocketNameUnread(t *testing.T) {
	for _, tc := range []struct{ name, typeURL string }{
		{"", security.UpstreamTLSContextTypeURL},
		{"raw", security.UpstreamTLSContextTypeURL},
		{"envoy.transport_sockets.tls", "example.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"},
	} {
		m := edsCluster()
		m.TransportSocket = tlsSocket(t, upstream(nil))
		m.TransportSocket.Name = tc.name
		m.TransportSocket.GetTypedConfig().TypeUrl = tc.typeURL
		_, v, err := decode(t, ClusterType, m)
		if err != nil {
			t.Errorf("transport_socket %q of %q: Decode: %v", tc.name, tc.typeURL, err)
			continue
		}
		if sc := v.(*Cluster).Security; sc == nil || sc.RootInstance != "roots" {
			t.Errorf("transport_socket %q of %q: Security = %+v, want roots from \"roots\"", tc.name, tc.typeURL, sc)
		}
	}
}

// A bootstrap without certificate_providers makes every TLS cluster
// invalid.
func TestClusterSecurityWithoutProviders(t *testing.T) {
	m := edsCluster()
	m.TransportSocket = tlsSocket(t, upstream(nil))
	_, _, err := ClusterType.Decode(DecodeOptions{}, toAny(t, m))
	want := `cds "c1": transport_socket.typed_config.common_tls_context.validation_context.ca_certificate_provider_instance.instance_name: "roots" is not in the bootstrap's certificate_providers`
	if err == nil || err.Error() != want {
		t.Errorf("Decode error = %v, want %s", err, want)
	}
}

// deprecatedInstance is a CommonTlsContext.CertificateProviderInstance.
func deprecatedInstance(instance, cert string) *tlsv3.CommonTlsContext_CertificateProviderInstance {
	return &tlsv3.CommonTlsContext_CertificateProviderInstance{InstanceName: instance, CertificateName: cert}
}

// As in gRPC C-core, each provider instance is read from its deprecated
// field when its current one is unset.
func TestClusterSecurityDeprecatedFields(t *testing.T) {
	exact := &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "a"}}
	tests := []struct {
		name   string
		common *tlsv3.CommonTlsContext
		want   *security.Config
	}{
		{"validation_context_certificate_provider_instance", &tlsv3.CommonTlsContext{
			TlsCertificateCertificateProviderInstance: deprecatedInstance("identity", "id"),
			ValidationContextType: &tlsv3.CommonTlsContext_ValidationContextCertificateProviderInstance{
				ValidationContextCertificateProviderInstance: deprecatedInstance("roots", "ca"),
			},
		}, &security.Config{IdentityInstance: "identity", IdentityCertName: "id", RootInstance: "roots", RootCertName: "ca"}},
		{"combined with SAN matchers", &tlsv3.CommonTlsContext{
			ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
				DefaultValidationContext:                     &tlsv3.CertificateValidationContext{MatchSubjectAltNames: []*matcherv3.StringMatcher{exact}},
				ValidationContextCertificateProviderInstance: deprecatedInstance("roots", ""),
			}},
		}, &security.Config{RootInstance: "roots", SANMatchers: []matcher.String{{Kind: matcher.Exact, Value: "a"}}}},
		{"current roots, deprecated identity", &tlsv3.CommonTlsContext{
			TlsCertificateCertificateProviderInstance: deprecatedInstance("identity", "id"),
			ValidationContextType:                     caContext("roots"),
		}, &security.Config{IdentityInstance: "identity", IdentityCertName: "id", RootInstance: "roots", RootCertName: "ca"}},
		{"the current field wins", &tlsv3.CommonTlsContext{
			TlsCertificateProviderInstance:            provider("identity", "new"),
			TlsCertificateCertificateProviderInstance: deprecatedInstance("nope", "old"),
			ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
				DefaultValidationContext:                     &tlsv3.CertificateValidationContext{CaCertificateProviderInstance: provider("roots", "new")},
				ValidationContextCertificateProviderInstance: deprecatedInstance("nope", "old"),
			}},
		}, &security.Config{IdentityInstance: "identity", IdentityCertName: "new", RootInstance: "roots", RootCertName: "new"}},
		{"sds identity beside a deprecated instance", &tlsv3.CommonTlsContext{
			TlsCertificateCertificateProviderInstance: deprecatedInstance("identity", ""),
			TlsCertificateSdsSecretConfigs:            []*tlsv3.SdsSecretConfig{{Name: "s"}},
			ValidationContextType:                     caContext("roots"),
		}, &security.Config{IdentityInstance: "identity", RootInstance: "roots", RootCertName: "ca"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := edsCluster()
			m.TransportSocket = tlsSocket(t, &tlsv3.UpstreamTlsContext{CommonTlsContext: tt.common})
			_, v, err := decode(t, ClusterType, m)
			if err != nil {
				t.Fatal(err)
			}
			if got := v.(*Cluster).Security; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Security = %+v, want %+v", got, tt.want)
			}
		})
	}

	const at = `cds "c1": transport_socket.typed_config.common_tls_context.`
	with := func(c *tlsv3.CommonTlsContext) func() proto.Message {
		return func() proto.Message {
			m := edsCluster()
			m.TransportSocket = tlsSocket(t, &tlsv3.UpstreamTlsContext{CommonTlsContext: c})
			return m
		}
	}
	deprecatedRoots := &tlsv3.CommonTlsContext_ValidationContextCertificateProviderInstance{
		ValidationContextCertificateProviderInstance: deprecatedInstance("roots", ""),
	}
	runErrorCases(t, ClusterType, "c1", []errorCase{
		{name: "unknown deprecated root instance", build: with(&tlsv3.CommonTlsContext{
			ValidationContextType: &tlsv3.CommonTlsContext_ValidationContextCertificateProviderInstance{
				ValidationContextCertificateProviderInstance: deprecatedInstance("nope", ""),
			},
		}), want: at + `validation_context_certificate_provider_instance.instance_name: "nope" is not in the bootstrap's certificate_providers`},
		{name: "bad SAN matcher beside a deprecated identity", build: with(&tlsv3.CommonTlsContext{
			TlsCertificateCertificateProviderInstance: deprecatedInstance("identity", ""),
			ValidationContextType:                     caContext("roots", &matcherv3.StringMatcher{}),
		}), want: at + `validation_context.match_subject_alt_names[0]: no match pattern is set`},
		{name: "unsupported field beside a deprecated root", build: with(&tlsv3.CommonTlsContext{
			ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
				DefaultValidationContext:                     &tlsv3.CertificateValidationContext{VerifyCertificateHash: []string{"h"}},
				ValidationContextCertificateProviderInstance: deprecatedInstance("roots", ""),
			}},
		}), want: at + `combined_validation_context.default_validation_context.verify_certificate_hash: not supported`},
		{name: "private key beside a deprecated root", build: with(&tlsv3.CommonTlsContext{
			TlsCertificates:       []*tlsv3.TlsCertificate{inlineKey},
			ValidationContextType: deprecatedRoots,
		}), want: at + `tls_certificates: not supported, use tls_certificate_provider_instance`},
		{name: "private key beside a deprecated identity", build: with(&tlsv3.CommonTlsContext{
			TlsCertificateCertificateProviderInstance: deprecatedInstance("identity", ""),
			TlsCertificates:       []*tlsv3.TlsCertificate{inlineKey},
			ValidationContextType: deprecatedRoots,
		}), want: at + `tls_certificates: not supported, use tls_certificate_provider_instance`},
		{name: "private key beside an identity instance", build: with(&tlsv3.CommonTlsContext{
			TlsCertificateProviderInstance: provider("identity", ""),
			TlsCertificates:                []*tlsv3.TlsCertificate{inlineKey},
			ValidationContextType:          caContext("roots"),
		}), want: at + `tls_certificates: not supported, use tls_certificate_provider_instance`},
		{name: "sds identity beside a deprecated root", build: with(&tlsv3.CommonTlsContext{
			TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: "s"}},
			ValidationContextType:          deprecatedRoots,
		}), want: at + `tls_certificate_sds_secret_configs: not supported, use tls_certificate_provider_instance`},
		{name: "combined without roots", build: with(&tlsv3.CommonTlsContext{
			ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
				DefaultValidationContext: &tlsv3.CertificateValidationContext{MatchSubjectAltNames: []*matcherv3.StringMatcher{exact}},
			}},
		}), want: at + `combined_validation_context.default_validation_context.ca_certificate_provider_instance: missing`},
	})
}

// inlineKey is a TlsCertificate carrying a private key.
var inlineKey = &tlsv3.TlsCertificate{PrivateKey: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "KEY"}}}

func TestServerSecurityDeprecatedIdentity(t *testing.T) {
	m := serverLis(chain(t, "c", nil))
	m.FilterChains[0].TransportSocket = tlsSocket(t, &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsCertificateCertificateProviderInstance: deprecatedInstance("identity", "id"),
	}})
	s := decodeServer(t, m)
	if sc := s.FilterChains[0].Security; sc == nil || sc.IdentityInstance != "identity" || sc.IdentityCertName != "id" {
		t.Errorf("Security = %+v, want identity from the deprecated field", sc)
	}
}
