package xdstest

import (
	"testing"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// SecretKey is the private key that every [SecretCase] carries.
const SecretKey = "-----BEGIN PRIVATE KEY-----never-to-be-shown"

// SecretProviders is a bootstrap "certificate_providers" object with the
// instances that the TLS contexts of [SecretCases] name: "identity" and
// "roots".
const SecretProviders = `{
	"identity": {"plugin_name": "file_watcher", "config": {"certificate_file": "/certs/cert.pem", "private_key_file": "/certs/key.pem"}},
	"roots": {"plugin_name": "file_watcher", "config": {"ca_certificate_file": "/certs/ca.pem"}}}`

// SecretCase is a TLS context that carries [SecretKey] by one way, current
// or deprecated, that gRPC does not take a key from. Without the key, each
// context is valid with the providers of [SecretProviders]: the key is
// the only reason to reject it.
type SecretCase struct {
	// Name says where the key is.
	Name string
	// Error is the error of a client's decoder, from the field below the
	// transport socket's typed_config.
	Error string
	// Upstream is the context as a Cluster carries it; nil when the field
	// exists on servers only.
	Upstream *tlsv3.UpstreamTlsContext
	// Downstream is the context as a server filter chain carries it.
	Downstream *tlsv3.DownstreamTlsContext
}

// SecretCases returns a SecretCase for each field of a TLS context that
// can carry a private key where gRPC takes none.
func SecretCases(t testing.TB) []SecretCase {
	t.Helper()
	key := &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: SecretKey}}
	chain := &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "chain"}}
	// A Secret, packed in the typed_config of an extension: a type the
	// client knows, so that CSDS can redact it.
	packed := func() *corev3.TypedExtensionConfig {
		a, err := anypb.New(&tlsv3.Secret{Name: "s", Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{CertificateChain: chain, PrivateKey: key}}})
		if err != nil {
			t.Fatal(err)
		}
		return &corev3.TypedExtensionConfig{Name: "provider", TypedConfig: a}
	}
	// An SDS config whose gRPC service holds channel credentials with the
	// key.
	sds := func() *tlsv3.SdsSecretConfig {
		return &tlsv3.SdsSecretConfig{Name: "s", SdsConfig: &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_ApiConfigSource{ApiConfigSource: &corev3.ApiConfigSource{
			ApiType: corev3.ApiConfigSource_GRPC,
			GrpcServices: []*corev3.GrpcService{{TargetSpecifier: &corev3.GrpcService_GoogleGrpc_{GoogleGrpc: &corev3.GrpcService_GoogleGrpc{
				TargetUri: "sds.example.com:443", StatPrefix: "sds",
				ChannelCredentials: &corev3.GrpcService_GoogleGrpc_ChannelCredentials{CredentialSpecifier: &corev3.GrpcService_GoogleGrpc_ChannelCredentials_SslCredentials{
					SslCredentials: &corev3.GrpcService_GoogleGrpc_SslCredentials{CertChain: chain, PrivateKey: key},
				}},
			}}}},
		}}}}
	}
	identity := func() *tlsv3.CertificateProviderPluginInstance {
		return &tlsv3.CertificateProviderPluginInstance{InstanceName: "identity"}
	}
	roots := func() *tlsv3.CertificateValidationContext {
		return &tlsv3.CertificateValidationContext{CaCertificateProviderInstance: &tlsv3.CertificateProviderPluginInstance{InstanceName: "roots"}}
	}
	combined := func(c *tlsv3.CommonTlsContext_CombinedCertificateValidationContext) *tlsv3.CommonTlsContext_CombinedValidationContext {
		c.DefaultValidationContext = roots()
		return &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: c}
	}
	common := []struct {
		name, err string
		change    func(c *tlsv3.CommonTlsContext)
	}{
		{"tls_certificates beside an identity instance",
			"common_tls_context.tls_certificates: not supported, use tls_certificate_provider_instance",
			func(c *tlsv3.CommonTlsContext) {
				c.TlsCertificates = []*tlsv3.TlsCertificate{{CertificateChain: chain, PrivateKey: key}}
			}},
		{"a Secret in the deprecated tls_certificate_certificate_provider",
			"common_tls_context.tls_certificate_certificate_provider: not supported, use tls_certificate_provider_instance",
			func(c *tlsv3.CommonTlsContext) {
				c.TlsCertificateCertificateProvider = &tlsv3.CommonTlsContext_CertificateProvider{Name: "provider",
					Config: &tlsv3.CommonTlsContext_CertificateProvider_TypedConfig{TypedConfig: packed()}}
			}},
		{"a Secret in the deprecated validation_context_certificate_provider",
			"common_tls_context.validation_context_certificate_provider: not supported, use validation_context.ca_certificate_provider_instance",
			func(c *tlsv3.CommonTlsContext) {
				c.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContextCertificateProvider{ValidationContextCertificateProvider: &tlsv3.CommonTlsContext_CertificateProvider{
					Name: "provider", Config: &tlsv3.CommonTlsContext_CertificateProvider_TypedConfig{TypedConfig: packed()}}}
			}},
		{"a Secret in the deprecated validation_context_certificate_provider of combined_validation_context",
			"common_tls_context.combined_validation_context.validation_context_certificate_provider: not supported, use default_validation_context.ca_certificate_provider_instance",
			func(c *tlsv3.CommonTlsContext) {
				c.ValidationContextType = combined(&tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
					ValidationContextCertificateProvider: &tlsv3.CommonTlsContext_CertificateProvider{
						Name: "provider", Config: &tlsv3.CommonTlsContext_CertificateProvider_TypedConfig{TypedConfig: packed()}},
				})
			}},
		{"a Secret in custom_tls_certificate_selector",
			"common_tls_context.custom_tls_certificate_selector: not supported",
			func(c *tlsv3.CommonTlsContext) { c.CustomTlsCertificateSelector = packed() }},
		{"credentials in tls_certificate_sds_secret_configs beside an identity instance",
			"common_tls_context.tls_certificate_sds_secret_configs[0].sds_config.api_config_source.grpc_services[0].google_grpc: not supported: it can carry credentials, which gRPC does not take from a control plane",
			func(c *tlsv3.CommonTlsContext) { c.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{sds()} }},
		{"credentials in the validation_context_sds_secret_config of combined_validation_context",
			"common_tls_context.combined_validation_context.validation_context_sds_secret_config.sds_config.api_config_source.grpc_services[0].google_grpc: not supported: it can carry credentials, which gRPC does not take from a control plane",
			func(c *tlsv3.CommonTlsContext) {
				c.ValidationContextType = combined(&tlsv3.CommonTlsContext_CombinedCertificateValidationContext{ValidationContextSdsSecretConfig: sds()})
			}},
		{"a Secret in a typed SAN matcher",
			"common_tls_context.validation_context.match_typed_subject_alt_names[0].matcher.custom.typed_config.tls_certificate.private_key: not supported: a secret, which gRPC does not take from a control plane",
			func(c *tlsv3.CommonTlsContext) {
				vc := roots()
				p := packed()
				vc.MatchTypedSubjectAltNames = []*tlsv3.SubjectAltNameMatcher{{SanType: tlsv3.SubjectAltNameMatcher_DNS,
					Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Custom{Custom: &xdscorev3.TypedExtensionConfig{Name: p.GetName(), TypedConfig: p.GetTypedConfig()}}}}}
				c.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: vc}
			}},
	}
	var cases []SecretCase
	for _, cc := range common {
		up := &tlsv3.CommonTlsContext{TlsCertificateProviderInstance: identity(), ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: roots()}}
		cc.change(up)
		down := &tlsv3.CommonTlsContext{TlsCertificateProviderInstance: identity()}
		cc.change(down)
		cases = append(cases, SecretCase{Name: cc.name, Error: cc.err,
			Upstream:   &tlsv3.UpstreamTlsContext{CommonTlsContext: up},
			Downstream: &tlsv3.DownstreamTlsContext{CommonTlsContext: down}})
	}
	return append(cases,
		SecretCase{Name: "session_ticket_keys",
			Error: "session_ticket_keys: not supported: session ticket keys are secrets, which gRPC does not take from a control plane",
			Downstream: &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{TlsCertificateProviderInstance: identity()},
				SessionTicketKeysType: &tlsv3.DownstreamTlsContext_SessionTicketKeys{SessionTicketKeys: &tlsv3.TlsSessionTicketKeys{Keys: []*corev3.DataSource{key}}}}},
		SecretCase{Name: "credentials in session_ticket_keys_sds_secret_config",
			Error: "session_ticket_keys_sds_secret_config.sds_config.api_config_source.grpc_services[0].google_grpc: not supported: it can carry credentials, which gRPC does not take from a control plane",
			Downstream: &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{TlsCertificateProviderInstance: identity()},
				SessionTicketKeysType: &tlsv3.DownstreamTlsContext_SessionTicketKeysSdsSecretConfig{SessionTicketKeysSdsSecretConfig: sds()}}},
	)
}

// TLSSocket returns the transport_socket that carries the TLS context ctx,
// an UpstreamTlsContext or a DownstreamTlsContext.
func TLSSocket(t testing.TB, ctx proto.Message) *corev3.TransportSocket {
	t.Helper()
	a, err := anypb.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return &corev3.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: a}}
}
