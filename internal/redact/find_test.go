package redact_test

import (
	"bytes"
	"testing"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/redact"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

// Find names the first sensitive field set, in field order, through
// repeated fields and Anys.
func TestFind(t *testing.T) {
	keyInSecret := &tlsv3.Secret{Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: tlsCert()}}
	tests := []struct {
		name string
		m    proto.Message
		want string // "" for no secret
	}{
		{"no secret", &tlsv3.UpstreamTlsContext{Sni: "x", CommonTlsContext: &tlsv3.CommonTlsContext{
			TlsCertificates: []*tlsv3.TlsCertificate{{CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "chain"}}}},
		}}, ""},
		{"private key, then password", &tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
			TlsCertificates: []*tlsv3.TlsCertificate{{}, tlsCert()},
		}}, "common_tls_context.tls_certificates[1].private_key"},
		{"session ticket keys", &tlsv3.DownstreamTlsContext{SessionTicketKeysType: &tlsv3.DownstreamTlsContext_SessionTicketKeys{
			SessionTicketKeys: &tlsv3.TlsSessionTicketKeys{Keys: []*corev3.DataSource{{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: []byte("k")}}}},
		}}, "session_ticket_keys.keys"},
		{"a Secret in a deprecated provider's typed_config", &tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
			TlsCertificateCertificateProvider: &tlsv3.CommonTlsContext_CertificateProvider{Name: "p", Config: &tlsv3.CommonTlsContext_CertificateProvider_TypedConfig{
				TypedConfig: &corev3.TypedExtensionConfig{Name: "p", TypedConfig: mustAny(t, keyInSecret)},
			}},
		}}, "common_tls_context.tls_certificate_certificate_provider"},
		{"a Secret in a typed SAN matcher", &tlsv3.CertificateValidationContext{MatchTypedSubjectAltNames: []*tlsv3.SubjectAltNameMatcher{{
			Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Custom{Custom: &xdscorev3.TypedExtensionConfig{TypedConfig: mustAny(t, keyInSecret)}}},
		}}}, "match_typed_subject_alt_names[0].matcher.custom.typed_config.tls_certificate.private_key"},
		{"a cluster with a key", clusterWithKey(t), "transport_socket.typed_config.common_tls_context.tls_certificates[0].private_key"},
		{"a demo cluster", controlplane.Cluster("c", "s"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := mustAny(t, tt.m)
			path, found := redact.Find(a.GetTypeUrl(), a.GetValue())
			if path != tt.want || found != (tt.want != "") {
				t.Errorf("Find = %q, %v; want %q, %v", path, found, tt.want, tt.want != "")
			}
		})
	}
	// A packed message that does not parse but names a secret-holding
	// type counts as a secret, at the Any.
	packed := mustAny(t, keyInSecret)
	packed.Value = append(packed.Value, 0xff)
	bad := &tlsv3.CertificateValidationContext{MatchTypedSubjectAltNames: []*tlsv3.SubjectAltNameMatcher{{
		Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Custom{Custom: &xdscorev3.TypedExtensionConfig{TypedConfig: packed}}},
	}}}
	a := mustAny(t, bad)
	if path, found := redact.Find(a.GetTypeUrl(), a.GetValue()); !found || path != "match_typed_subject_alt_names[0].matcher.custom.typed_config" {
		t.Errorf("Find on a malformed packed Secret = %q, %v", path, found)
	}
}

// The fields that exist to carry credentials or key material are redacted
// though the xDS APIs do not mark them, a message of a type that is not
// linked in dropped as a whole.
func TestBytesRedactsCredentialFields(t *testing.T) {
	unknown := &anypb.Any{TypeUrl: "type.googleapis.com/example.KeyHolder", Value: append([]byte{0x0a, byte(len(secret))}, secret...)}
	tlsCtx := &tlsv3.UpstreamTlsContext{Sni: "sni.example.com", CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsCertificateCertificateProvider: &tlsv3.CommonTlsContext_CertificateProvider{Name: "p", Config: &tlsv3.CommonTlsContext_CertificateProvider_TypedConfig{
			TypedConfig: &corev3.TypedExtensionConfig{Name: "p", TypedConfig: unknown},
		}},
	}}
	token := &corev3.GrpcService{TargetSpecifier: &corev3.GrpcService_GoogleGrpc_{GoogleGrpc: &corev3.GrpcService_GoogleGrpc{
		TargetUri: "authz.example.com:443",
		CallCredentials: []*corev3.GrpcService_GoogleGrpc_CallCredentials{{
			CredentialSpecifier: &corev3.GrpcService_GoogleGrpc_CallCredentials_AccessToken{AccessToken: secret},
		}},
	}}}
	for name, m := range map[string]proto.Message{"unknown type in a deprecated provider": tlsCtx, "access token": token} {
		a := mustAny(t, m)
		out, changed := redact.Bytes(a.GetTypeUrl(), a.GetValue())
		if !changed || bytes.Contains(out, []byte(secret)) {
			t.Errorf("%s: changed %v, secret kept %v", name, changed, bytes.Contains(out, []byte(secret)))
		}
		for _, keep := range []string{"sni.example.com", "authz.example.com:443"} {
			if bytes.Contains(a.GetValue(), []byte(keep)) && !bytes.Contains(out, []byte(keep)) {
				t.Errorf("%s: %q lost by redaction", name, keep)
			}
		}
	}
}
