package xdsresource_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/controlplane"
	"github.com/xdslens/xdslens/internal/xdstest"
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
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	_, v, err := typ.Decode(secretOpts, a)
	return v, err
}
