package security

import (
	"errors"
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/redact"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/internal/decoding"
)

// gRPC takes certificates and keys only from the certificate provider
// instances of its bootstrap (gRFC A29), never from a control plane. A TLS
// context that carries a secret anyway, by any field, current or
// deprecated, is rejected with the path of that field: the secret has left
// the place where it was kept, which is reported rather than ignored (gRPC
// C-core and grpc-go ignore most of these fields and accept such a
// context). The checks run before every other rule of the context, so that
// the error names the secret whatever else is wrong.

// errNoCredentials ends the error of a field that can carry credentials.
const errNoCredentials = "not supported: it can carry credentials, which gRPC does not take from a control plane"

// checkCommonSecrets rejects the fields of c that carry a certificate or a
// key by a way gRPC does not support, and so may hold a secret: some of
// them only in a packed extension config whose type may not be known here.
// Errors start with the field below common_tls_context.
func checkCommonSecrets(c *tlsv3.CommonTlsContext) error {
	switch {
	case len(c.GetTlsCertificates()) != 0:
		return errors.New("tls_certificates: not supported, use tls_certificate_provider_instance")
	case c.GetTlsCertificateCertificateProvider() != nil:
		return errors.New("tls_certificate_certificate_provider: not supported, use tls_certificate_provider_instance")
	case c.GetCustomTlsCertificateSelector() != nil:
		return errors.New("custom_tls_certificate_selector: not supported")
	}
	for i, s := range c.GetTlsCertificateSdsSecretConfigs() {
		if err := checkSDSCredentials(s, fmt.Sprintf("tls_certificate_sds_secret_configs[%d]", i)); err != nil {
			return err
		}
	}
	switch t := c.GetValidationContextType().(type) {
	case *tlsv3.CommonTlsContext_ValidationContextCertificateProvider:
		return errors.New("validation_context_certificate_provider: not supported, use validation_context.ca_certificate_provider_instance")
	case *tlsv3.CommonTlsContext_ValidationContextSdsSecretConfig:
		return checkSDSCredentials(t.ValidationContextSdsSecretConfig, "validation_context_sds_secret_config")
	case *tlsv3.CommonTlsContext_CombinedValidationContext:
		const at = "combined_validation_context"
		if t.CombinedValidationContext.GetValidationContextCertificateProvider() != nil {
			return fmt.Errorf("%s.validation_context_certificate_provider: not supported, use default_validation_context.ca_certificate_provider_instance", at)
		}
		return checkSDSCredentials(t.CombinedValidationContext.GetValidationContextSdsSecretConfig(), at+".validation_context_sds_secret_config")
	}
	return nil
}

// checkDownstreamSecrets applies the rules of this file to the
// DownstreamTlsContext m, unmarshalled from cfg. Errors start with
// "typed_config".
func checkDownstreamSecrets(cfg *anypb.Any, m *tlsv3.DownstreamTlsContext) error {
	const at = "typed_config"
	if err := checkSessionTicketKeys(m); err != nil {
		return fmt.Errorf("%s.%v", at, err)
	}
	if err := checkCommonSecrets(m.GetCommonTlsContext()); err != nil {
		return fmt.Errorf("%s.common_tls_context.%v", at, err)
	}
	return checkSensitive(cfg, at)
}

// CheckSocketSecrets applies the rules of this file to the
// transport_socket of a server filter chain, before anything else of the
// chain is validated, so that a secret it carries is reported whatever
// else is wrong with the chain, and whatever its transport_socket's type.
// (The TLS context is checked again with the rest of its rules.) Errors
// start with the field below transport_socket.
func CheckSocketSecrets(ts *corev3.TransportSocket) error {
	cfg := ts.GetTypedConfig()
	if cfg.GetTypeUrl() == DownstreamTLSContextTypeURL {
		m := new(tlsv3.DownstreamTlsContext)
		if decoding.Unmarshal(cfg.GetValue(), m) == nil {
			return checkDownstreamSecrets(cfg, m)
		}
	}
	return checkSensitive(cfg, "typed_config")
}

// checkSessionTicketKeys rejects the session ticket keys of a server's TLS
// context: secrets themselves, or an SDS config that carries credentials.
// gRPC makes its own session tickets.
func checkSessionTicketKeys(m *tlsv3.DownstreamTlsContext) error {
	switch t := m.GetSessionTicketKeysType().(type) {
	case *tlsv3.DownstreamTlsContext_SessionTicketKeys:
		return errors.New("session_ticket_keys: not supported: session ticket keys are secrets, which gRPC does not take from a control plane")
	case *tlsv3.DownstreamTlsContext_SessionTicketKeysSdsSecretConfig:
		return checkSDSCredentials(t.SessionTicketKeysSdsSecretConfig, "session_ticket_keys_sds_secret_config")
	}
	return nil
}

// checkSDSCredentials rejects an SdsSecretConfig, found at at, whose config
// source names a gRPC service with credentials of its own (a google_grpc
// service: channel and call credentials, private keys and tokens among
// them) or with initial_metadata (headers, tokens among them). gRPC never
// uses SDS, so an SdsSecretConfig is otherwise ignored or rejected by the
// rules of its field. s may be nil.
func checkSDSCredentials(s *tlsv3.SdsSecretConfig, at string) error {
	for i, g := range s.GetSdsConfig().GetApiConfigSource().GetGrpcServices() {
		svc := fmt.Sprintf("%s.sds_config.api_config_source.grpc_services[%d]", at, i)
		switch {
		case g.GetGoogleGrpc() != nil:
			return fmt.Errorf("%s.google_grpc: %s", svc, errNoCredentials)
		case len(g.GetInitialMetadata()) != 0:
			return fmt.Errorf("%s.initial_metadata: %s", svc, errNoCredentials)
		}
	}
	return nil
}

// checkSensitive rejects a TLS context, cfg at at, that holds a field the
// xDS APIs mark sensitive anywhere (in a message packed in an Any too, when
// its type is linked in), whichever field leads to it: it catches what the
// field rules above do not name, such as a Secret in an extension config
// that gRPC ignores.
func checkSensitive(cfg *anypb.Any, at string) error {
	path, found := redact.Find(cfg.GetTypeUrl(), cfg.GetValue())
	switch {
	case !found:
		return nil
	case path == "":
		return fmt.Errorf("%s: holds a secret that cannot be read, which gRPC does not take from a control plane", at)
	}
	return fmt.Errorf("%s.%s: not supported: a secret, which gRPC does not take from a control plane", at, path)
}
