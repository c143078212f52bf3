package csds_test

import (
	"bytes"
	"testing"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
)

// A Cluster carrying an inline private key is rejected (gRPC never takes
// keys from a control plane), and CSDS shows the rejected resource with the
// key redacted.
func TestFailedConfigurationRedacted(t *testing.T) {
	const key = "-----BEGIN PRIVATE KEY-----do-not-print"
	f := newFixture(t, nil)
	rec, st := f.watch("c1")
	tlsCtx, err := anypb.New(&tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{TlsCertificates: []*tlsv3.TlsCertificate{{
		CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "chain"}},
		PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: key}},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	c := controlplane.Cluster("c1", "svc")
	c.TransportSocket = &corev3.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: tlsCtx}}
	f.Send(st, xdstest.Response(cdsURL, "1", c))
	rec.Expect(t, xdsclient.NotifyResourceError, codes.InvalidArgument)

	resp := f.fetch()
	_, g := only(t, resp)
	if g.GetClientStatus() != adminv3.ClientResourceStatus_NACKED {
		t.Fatalf("status %v, want NACKED", g.GetClientStatus())
	}
	failed := g.GetErrorState().GetFailedConfiguration()
	if failed == nil {
		t.Fatal("no failed_configuration")
	}
	whole, err := proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(whole, []byte("do-not-print")) {
		t.Fatal("the private key is in the CSDS response")
	}
	for _, want := range []string{"[redacted]", "chain", "svc"} {
		if !bytes.Contains(failed.GetValue(), []byte(want)) {
			t.Errorf("failed_configuration lacks %q", want)
		}
	}
}
