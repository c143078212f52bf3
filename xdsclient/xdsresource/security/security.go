// Package security validates the TLS settings of xDS resources (gRFC A29,
// with A82 and A101): the UpstreamTlsContext of a Cluster and the
// DownstreamTlsContext of a server filter chain, both into a Config, whose
// certificates come only from the certificate provider instances of the
// bootstrap. A TLS context that carries a secret, by any field, is
// rejected. Its rules are rows of the table in package xdsresource.
package security

import (
	"errors"
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/internal/decoding"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
)

// Type URLs of the TLS transport socket configs (gRFC A29).
const (
	// UpstreamTLSContextTypeURL is the transport_socket config of a
	// Cluster.
	UpstreamTLSContextTypeURL = decoding.TypeURLPrefix + "envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"
	// DownstreamTLSContextTypeURL is the transport_socket config of a
	// server filter chain.
	DownstreamTLSContextTypeURL = decoding.TypeURLPrefix + "envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext"
)

// tlsTransportSocketName is the only transport_socket name a server filter
// chain may have (a Cluster's is not read).
const tlsTransportSocketName = "envoy.transport_sockets.tls"

// MaxSNILength is the longest sni an UpstreamTlsContext may carry, in
// bytes (gRFC A101, as Envoy).
const MaxSNILength = 255

// Config is a validated TLS configuration (gRFC A29): the
// UpstreamTlsContext of a Cluster or the DownstreamTlsContext of a server
// filter chain. Certificates come only from certificate provider instances
// of the bootstrap's "certificate_providers", named here.
type Config struct {
	// IdentityInstance and IdentityCertName are
	// tls_certificate_provider_instance: where this side's certificate
	// comes from. IdentityInstance is always set on a server; on a client
	// it is empty when the client presents no certificate.
	IdentityInstance, IdentityCertName string
	// RootInstance and RootCertName are the validation context's
	// ca_certificate_provider_instance: the roots that the peer's
	// certificate is checked against. On a client it is set unless
	// SystemRootCerts is; on a server it is empty when client certificates
	// are not checked.
	RootInstance, RootCertName string
	// SystemRootCerts is the validation context's system_root_certs (gRFC
	// A82): the peer's certificate is checked against the system's roots.
	// Clients only, and only when no root instance is named, current or
	// deprecated field.
	SystemRootCerts bool
	// SANMatchers are the validation context's match_subject_alt_names: a
	// peer certificate is accepted when one of its SANs matches one of
	// them, or always when there are none. Clients only.
	SANMatchers []matcher.String
	// SNI is the UpstreamTlsContext's sni (gRFC A101): the server name the
	// client sends, at most 255 bytes. Clients only.
	SNI string
	// AutoHostSNI is the UpstreamTlsContext's auto_host_sni: the client
	// sends the endpoint's hostname as its server name when it has one,
	// and SNI otherwise. Clients only.
	AutoHostSNI bool
	// AutoSNISANValidation is the UpstreamTlsContext's
	// auto_sni_san_validation: the peer's certificate is accepted when one
	// of its DNS SANs matches the server name sent, in place of
	// SANMatchers. Clients only.
	AutoSNISANValidation bool
	// RequireClientCert is the DownstreamTlsContext's
	// require_client_certificate. Servers only; RootInstance is set
	// whenever it is true.
	RequireClientCert bool
}

// Upstream validates a Cluster's transport_socket. A nil socket means
// plaintext and gives a nil Config. hasProvider reports whether the
// bootstrap has a certificate provider instance of that name (nil knows
// none). Errors start with the field path below transport_socket.
func Upstream(ts *corev3.TransportSocket, hasProvider func(instance string) bool) (*Config, error) {
	if ts == nil {
		return nil, nil
	}
	m := new(tlsv3.UpstreamTlsContext)
	if err := upstreamTLSContextOf(ts, m); err != nil {
		return nil, err
	}
	const at = "typed_config"
	if err := checkCommonSecrets(m.GetCommonTlsContext()); err != nil {
		return nil, fmt.Errorf("%s.common_tls_context.%v", at, err)
	}
	if err := checkSensitive(ts.GetTypedConfig(), at); err != nil {
		return nil, err
	}
	if m.GetCommonTlsContext() == nil {
		return nil, fmt.Errorf("%s.common_tls_context: missing", at)
	}
	sc, err := validateCommonTLS(hasProvider, m.GetCommonTlsContext(), false)
	if err != nil {
		return nil, fmt.Errorf("%s.common_tls_context.%v", at, err)
	}
	if len(m.GetSni()) > MaxSNILength {
		return nil, fmt.Errorf("%s.sni: %d bytes, at most %d are allowed", at, len(m.GetSni()), MaxSNILength)
	}
	sc.SNI, sc.AutoHostSNI, sc.AutoSNISANValidation = m.GetSni(), m.GetAutoHostSni(), m.GetAutoSniSanValidation()
	return sc, nil
}

// Downstream validates a server filter chain's transport_socket, nil
// meaning plaintext, as Upstream does a Cluster's.
func Downstream(ts *corev3.TransportSocket, hasProvider func(instance string) bool) (*Config, error) {
	if ts == nil {
		return nil, nil
	}
	m := new(tlsv3.DownstreamTlsContext)
	if err := tlsContextOf(ts, DownstreamTLSContextTypeURL, m); err != nil {
		return nil, err
	}
	const at = "typed_config"
	if err := checkDownstreamSecrets(ts.GetTypedConfig(), m); err != nil {
		return nil, err
	}
	switch {
	case m.GetRequireSni().GetValue():
		return nil, fmt.Errorf("%s.require_sni: not supported", at)
	case m.GetOcspStaplePolicy() != tlsv3.DownstreamTlsContext_LENIENT_STAPLING:
		return nil, fmt.Errorf("%s.ocsp_staple_policy: %v is not supported, want LENIENT_STAPLING", at, m.GetOcspStaplePolicy())
	case m.GetCommonTlsContext() == nil:
		return nil, fmt.Errorf("%s.common_tls_context: missing", at)
	}
	sc, err := validateCommonTLS(hasProvider, m.GetCommonTlsContext(), true)
	if err != nil {
		return nil, fmt.Errorf("%s.common_tls_context.%v", at, err)
	}
	sc.RequireClientCert = m.GetRequireClientCertificate().GetValue()
	if sc.RequireClientCert && sc.RootInstance == "" {
		return nil, fmt.Errorf("%s.require_client_certificate: true, but common_tls_context has no ca_certificate_provider_instance", at)
	}
	return sc, nil
}

// upstreamTLSContextOf checks the type of a Cluster's transport_socket ts
// and unmarshals its config into the empty m. As in gRPC C-core
// (UpstreamTlsContextParse), the socket is known by its typed_config's
// type, whatever the prefix of its type URL, and its name is not read.
func upstreamTLSContextOf(ts *corev3.TransportSocket, m *tlsv3.UpstreamTlsContext) error {
	return decoding.UnmarshalExtension(ts.GetTypedConfig(), m)
}

// tlsContextOf checks the name and type of a server filter chain's ts and
// unmarshals its config into the empty m.
func tlsContextOf(ts *corev3.TransportSocket, typeURL string, m proto.Message) error {
	if ts.GetName() != tlsTransportSocketName {
		return fmt.Errorf("name: %q is not supported, want %q", ts.GetName(), tlsTransportSocketName)
	}
	cfg := ts.GetTypedConfig()
	if cfg.GetTypeUrl() != typeURL {
		return fmt.Errorf("typed_config: type %q is not supported, want %q", cfg.GetTypeUrl(), typeURL)
	}
	if err := decoding.Unmarshal(cfg.GetValue(), m); err != nil {
		return fmt.Errorf("typed_config: %v", err)
	}
	return nil
}

// validateCommonTLS applies gRFC A29 to a CommonTlsContext, for a server
// or a client. Errors start with the field below common_tls_context.
//
// As in gRPC C-core, the rules are applied once to the whole context, and
// each provider instance is read from its current field
// (tls_certificate_provider_instance, a validation context's
// ca_certificate_provider_instance) or, when that is unset, from its
// deprecated one (tls_certificate_certificate_provider_instance,
// validation_context_certificate_provider_instance on its own or inside
// combined_validation_context). Using a deprecated field excuses nothing
// that the rules reject. The fields that can carry a secret have been
// rejected before (checkCommonSecrets), even beside a provider instance,
// where gRPC ignores them.
func validateCommonTLS(hasProvider func(string) bool, c *tlsv3.CommonTlsContext, server bool) (*Config, error) {
	switch {
	case c.GetTlsParams() != nil:
		return nil, errors.New("tls_params: not supported")
	case c.GetCustomHandshaker() != nil:
		return nil, errors.New("custom_handshaker: not supported")
	}
	sc := new(Config)
	var idField string
	if id := c.GetTlsCertificateProviderInstance(); id != nil {
		idField = "tls_certificate_provider_instance"
		sc.IdentityInstance, sc.IdentityCertName = id.GetInstanceName(), id.GetCertificateName()
	} else if id := c.GetTlsCertificateCertificateProviderInstance(); id != nil {
		idField = "tls_certificate_certificate_provider_instance"
		sc.IdentityInstance, sc.IdentityCertName = id.GetInstanceName(), id.GetCertificateName()
	} else if len(c.GetTlsCertificateSdsSecretConfigs()) != 0 {
		return nil, errors.New("tls_certificate_sds_secret_configs: not supported, use tls_certificate_provider_instance")
	}
	rootField, err := validationContext(c, server, sc)
	if err != nil {
		return nil, err
	}
	switch {
	case server && idField == "":
		return nil, errors.New("tls_certificate_provider_instance: missing, a server needs an identity certificate")
	case !server && rootField == "" && !sc.SystemRootCerts:
		return nil, errors.New("validation_context: missing, a client needs ca_certificate_provider_instance or system_root_certs")
	}
	if idField != "" {
		if err := checkProviderInstance(hasProvider, sc.IdentityInstance); err != nil {
			return nil, fmt.Errorf("%s.%v", idField, err)
		}
	}
	if rootField != "" {
		if err := checkProviderInstance(hasProvider, sc.RootInstance); err != nil {
			return nil, fmt.Errorf("%s.%v", rootField, err)
		}
	}
	return sc, nil
}

// validationContext reads the validation_context_type of c into sc and
// returns the path of the field that named the root provider instance, ""
// when no validation context is set. A validation context, alone or as the
// default of a combined one, is checked whichever field names the roots.
func validationContext(c *tlsv3.CommonTlsContext, server bool, sc *Config) (rootField string, err error) {
	var root interface {
		GetInstanceName() string
		GetCertificateName() string
	}
	var vc *tlsv3.CertificateValidationContext
	var at string
	switch t := c.GetValidationContextType().(type) {
	case nil:
		return "", nil
	case *tlsv3.CommonTlsContext_ValidationContext:
		vc, at = t.ValidationContext, "validation_context"
	case *tlsv3.CommonTlsContext_CombinedValidationContext:
		vc, at = t.CombinedValidationContext.GetDefaultValidationContext(), "combined_validation_context.default_validation_context"
		if old := t.CombinedValidationContext.GetValidationContextCertificateProviderInstance(); old != nil {
			root, rootField = old, "combined_validation_context.validation_context_certificate_provider_instance"
		}
	case *tlsv3.CommonTlsContext_ValidationContextCertificateProviderInstance:
		root, rootField = t.ValidationContextCertificateProviderInstance, "validation_context_certificate_provider_instance"
	case *tlsv3.CommonTlsContext_ValidationContextSdsSecretConfig:
		return "", errors.New("validation_context_sds_secret_config: not supported, use validation_context.ca_certificate_provider_instance")
	default:
		return "", fmt.Errorf("%s: not supported, use validation_context.ca_certificate_provider_instance", setOneof(c, "validation_context_type").Name())
	}
	if at != "" {
		if err := checkValidationContext(vc, at, server, sc); err != nil {
			return "", err
		}
		if ca := vc.GetCaCertificateProviderInstance(); ca != nil { // the current field wins
			root, rootField = ca, at+".ca_certificate_provider_instance"
		}
	}
	if root == nil {
		switch {
		case vc.GetSystemRootCerts() != nil && server:
			return "", fmt.Errorf("%s.system_root_certs: not supported on servers, use ca_certificate_provider_instance", at)
		case vc.GetSystemRootCerts() != nil:
			sc.SystemRootCerts = true
			return "", nil
		case server:
			// As in gRPC C-core: a server with no roots does not ask for
			// client certificates (and may not require one).
			return "", nil
		}
		return "", fmt.Errorf("%s.ca_certificate_provider_instance: missing", at)
	}
	sc.RootInstance, sc.RootCertName = root.GetInstanceName(), root.GetCertificateName()
	return rootField, nil
}

// checkValidationContext rejects the fields of vc, found at at, that gRPC
// does not support, and reads its match_subject_alt_names into sc. vc may
// be nil.
func checkValidationContext(vc *tlsv3.CertificateValidationContext, at string, server bool, sc *Config) error {
	switch {
	case len(vc.GetVerifyCertificateSpki()) != 0:
		return fmt.Errorf("%s.verify_certificate_spki: not supported", at)
	case len(vc.GetVerifyCertificateHash()) != 0:
		return fmt.Errorf("%s.verify_certificate_hash: not supported", at)
	case vc.GetRequireSignedCertificateTimestamp().GetValue():
		return fmt.Errorf("%s.require_signed_certificate_timestamp: not supported", at)
	case vc.GetCrl() != nil:
		return fmt.Errorf("%s.crl: not supported", at)
	case vc.GetCustomValidatorConfig() != nil:
		return fmt.Errorf("%s.custom_validator_config: not supported", at)
	}
	return sanMatchers(vc.GetMatchSubjectAltNames(), at, server, sc)
}

// sanMatchers validates match_subject_alt_names, found in the validation
// context at, into sc.
func sanMatchers(ms []*matcherv3.StringMatcher, at string, server bool, sc *Config) error {
	for i, m := range ms {
		if server {
			return fmt.Errorf("%s.match_subject_alt_names: not supported on servers", at)
		}
		sm, err := matcher.ValidateString(m)
		if err != nil {
			return fmt.Errorf("%s.match_subject_alt_names[%d]: %v", at, i, err)
		}
		if sm.Kind == matcher.Regex && m.GetIgnoreCase() {
			return fmt.Errorf("%s.match_subject_alt_names[%d].ignore_case: not supported with safe_regex", at, i)
		}
		sc.SANMatchers = append(sc.SANMatchers, sm)
	}
	return nil
}

// checkProviderInstance reports an error, starting with "instance_name", when
// name is not an instance of the bootstrap's certificate_providers.
func checkProviderInstance(hasProvider func(string) bool, name string) error {
	if name == "" {
		return errors.New("instance_name: empty")
	}
	if hasProvider == nil || !hasProvider(name) {
		return fmt.Errorf("instance_name: %q is not in the bootstrap's certificate_providers", name)
	}
	return nil
}

// setOneof returns the field set in the oneof named oneof of m, which must
// be set.
func setOneof(m proto.Message, oneof string) protoreflect.FieldDescriptor {
	r := m.ProtoReflect()
	return r.WhichOneof(r.Descriptor().Oneofs().ByName(protoreflect.Name(oneof)))
}
