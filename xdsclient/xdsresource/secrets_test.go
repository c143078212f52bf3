package xdsresource_test

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// secretOpts knows the provider instances of xdstest.SecretProviders.
var secretOpts = xdsresource.DecodeOptions{HasCertificateProvider: func(name string) bool { return name == "identity" || name == "roots" }}

// A TLS context that carries a private key by any field, current or
// deprecated, is rejected on a Cluster and on a server Listener, with the
// path of that field.
func TestSecretsRejected(t *testing.T) {
	const lisName = "grpc/server?xds.resource.listening_address=127.0.0.1:8443"
	for _, sc := range xdstest.SecretCases(t) {
		t.Run(sc.Name, func(t *testing.T) {
			if sc.Upstream != nil {
				c := controlplane.Cluster("c1", "svc")
				c.TransportSocket = xdstest.TLSSocket(t, sc.Upstream)
				v, err := decodeSecret(t, xdsresource.ClusterType, c)
				if want := `cds "c1": transport_socket.typed_config.` + sc.Error; err == nil || err.Error() != want {
					t.Errorf("Cluster: Decode = %v, %v\nwant error %s", v, err, want)
				}
			}
			l := controlplane.ServerListener(lisName, "127.0.0.1", 8443, "r1")
			l.FilterChains[0].TransportSocket = xdstest.TLSSocket(t, sc.Downstream)
			v, err := decodeSecret(t, xdsresource.ListenerType, l)
			if want := `lds "` + lisName + `": filter_chains[0].transport_socket.typed_config.` + sc.Error; err == nil || err.Error() != want {
				t.Errorf("server Listener: Decode = %v, %v\nwant error %s", v, err, want)
			}
		})
	}
}

// decodeSecret decodes m with the provider instances of the cases.
func decodeSecret(t testing.TB, typ xdsresource.Type, m proto.Message) (any, error) {
	t.Helper()
	_, v, err := typ.Decode(secretOpts, toAnyT(t, m))
	return v, err
}

// A server filter chain that gRPC ignores is validated no further, but a
// secret in its transport socket is rejected all the same, in a TLS
// context or in any other config.
func TestSecretsInIgnoredChainRejected(t *testing.T) {
	const lisName = "grpc/server?xds.resource.listening_address=127.0.0.1:8443"
	key := xdstest.SecretCases(t)[0].Downstream // tls_certificates
	secret := &tlsv3.Secret{Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: key.GetCommonTlsContext().GetTlsCertificates()[0]}}
	for _, tc := range []struct {
		name, want string
		socket     *corev3.TransportSocket
	}{
		{"a TLS context", "typed_config.common_tls_context.tls_certificates: not supported, use tls_certificate_provider_instance", xdstest.TLSSocket(t, key)},
		{"a Secret as the socket's config", "typed_config.tls_certificate.private_key: not supported: a secret, which gRPC does not take from a control plane",
			&corev3.TransportSocket{Name: "custom", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: toAnyT(t, secret)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := controlplane.ServerListener(lisName, "127.0.0.1", 8443, "r1")
			ignored := proto.Clone(l.FilterChains[0]).(*listenerv3.FilterChain)
			ignored.FilterChainMatch = &listenerv3.FilterChainMatch{ServerNames: []string{"a.example.com"}}
			ignored.TransportSocket = tc.socket
			l.FilterChains = append(l.FilterChains, ignored)
			v, err := decodeSecret(t, xdsresource.ListenerType, l)
			if want := `lds "` + lisName + `": filter_chains[1].transport_socket.` + tc.want; err == nil || err.Error() != want {
				t.Errorf("Decode = %v, %v\nwant error %s", v, err, want)
			}
		})
	}
}

func toAnyT(t testing.TB, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
