package redact_test

import (
	"bytes"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/redact"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

const secret = "-----BEGIN PRIVATE KEY-----secret"

func tlsCert() *tlsv3.TlsCertificate {
	return &tlsv3.TlsCertificate{
		CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "chain"}},
		PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: []byte(secret)}},
		Password:         &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "hunter2"}},
	}
}

func mustAny(t testing.TB, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func clusterWithKey(t testing.TB) *clusterv3.Cluster {
	c := controlplane.Cluster("c1", "svc")
	c.TransportSocket = &corev3.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corev3.TransportSocket_TypedConfig{
		TypedConfig: mustAny(t, &tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{TlsCertificates: []*tlsv3.TlsCertificate{tlsCert()}}}),
	}}
	return c
}

func listenerWithKey(t testing.TB) *listenerv3.Listener {
	l := controlplane.ServerListener("grpc/server?xds.resource.listening_address=127.0.0.1:8443", "127.0.0.1", 8443, "r1")
	l.FilterChains[0].TransportSocket = &corev3.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corev3.TransportSocket_TypedConfig{
		TypedConfig: mustAny(t, &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{TlsCertificates: []*tlsv3.TlsCertificate{tlsCert()}}}),
	}}
	return l
}

// Private keys and passwords are replaced wherever they are nested, in
// Anys too; everything else is kept.
func TestBytesRedactsNestedSecrets(t *testing.T) {
	for name, m := range map[string]proto.Message{"cluster": clusterWithKey(t), "server listener": listenerWithKey(t)} {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		a := mustAny(t, m)
		out, changed := redact.Bytes(a.GetTypeUrl(), b)
		if !changed {
			t.Fatalf("%s: nothing redacted", name)
		}
		if bytes.Contains(out, []byte(secret)) || bytes.Contains(out, []byte("hunter2")) {
			t.Fatalf("%s: secret still in the redacted bytes", name)
		}
		for _, keep := range []string{"chain", "c1", "svc", "127.0.0.1", "r1"} {
			if bytes.Contains(b, []byte(keep)) && !bytes.Contains(out, []byte(keep)) {
				t.Errorf("%s: %q lost by redaction", name, keep)
			}
		}
		got := m.ProtoReflect().New().Interface()
		if err := proto.Unmarshal(out, got); err != nil {
			t.Fatalf("%s: redacted bytes do not parse: %v", name, err)
		}
		if !bytes.Contains(out, []byte(redact.Redacted)) {
			t.Errorf("%s: no %q marker in the output", name, redact.Redacted)
		}
		if ra := redact.Any(a); bytes.Contains(ra.GetValue(), []byte(secret)) || ra.GetTypeUrl() != a.GetTypeUrl() {
			t.Errorf("%s: Any: secret kept or type changed", name)
		}
		if !bytes.Contains(a.GetValue(), []byte(secret)) {
			t.Errorf("%s: Any changed its argument", name)
		}
	}
}

// A resource with no secret is returned as it is, without being decoded.
func TestBytesLeavesOthersAlone(t *testing.T) {
	for _, m := range controlplane.DemoResources("demo") {
		a := mustAny(t, m)
		out, changed := redact.Bytes(a.GetTypeUrl(), a.GetValue())
		if changed || &out[0] != &a.GetValue()[0] {
			t.Errorf("%s: changed %v", a.GetTypeUrl(), changed)
		}
		if n := testing.AllocsPerRun(50, func() { redact.Bytes(a.GetTypeUrl(), a.GetValue()) }); n != 0 {
			t.Errorf("%s: %v allocations for a resource with no secret", a.GetTypeUrl(), n)
		}
	}
	// Unknown types and garbage are passed through; garbage that names a
	// secret-holding type is withheld.
	if out, changed := redact.Bytes("type.googleapis.com/no.such.Type", []byte("x")); changed || string(out) != "x" {
		t.Errorf("unknown type: %q, %v", out, changed)
	}
	bad := append([]byte{0xff, 0xff}, "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"...)
	if out, changed := redact.Bytes("type.googleapis.com/envoy.config.cluster.v3.Cluster", bad); !changed || out != nil {
		t.Errorf("unparsable bytes naming a TLS context: %q, %v; want nil, true", out, changed)
	}
}

func BenchmarkBytesNoSecret(b *testing.B) {
	m := controlplane.Cluster("some-cluster-name", "some-service")
	raw, _ := proto.Marshal(m)
	url := "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	redact.Bytes(url, raw)
	b.ReportAllocs()
	for b.Loop() {
		redact.Bytes(url, raw)
	}
}

// FuzzBytes checks that the fast check and the full redaction agree: bytes
// Bytes passes through unchanged have nothing to redact when unmarshalled,
// redacted bytes need no second redaction, and Find finds a secret in
// whatever Bytes redacts.
func FuzzBytes(f *testing.F) {
	for _, m := range []proto.Message{clusterWithKey(f), listenerWithKey(f), controlplane.Cluster("c", "s")} {
		b, _ := proto.Marshal(m)
		f.Add(b, m.ProtoReflect().Descriptor().Name() == "Listener")
	}
	f.Fuzz(func(t *testing.T, b []byte, listener bool) {
		var m proto.Message = &clusterv3.Cluster{}
		if listener {
			m = &listenerv3.Listener{}
		}
		url := "type.googleapis.com/" + string(m.ProtoReflect().Descriptor().FullName())
		out, changed := redact.Bytes(url, b)
		if _, found := redact.Find(url, b); changed && !found {
			t.Fatalf("Bytes redacted what Find does not find: %x", b)
		}
		if !changed {
			if proto.Unmarshal(b, m) == nil && redact.Message(m) {
				t.Fatalf("Bytes found no secret, the full walk did")
			}
			return
		}
		if out == nil {
			return
		}
		if again, changed := redact.Bytes(url, out); changed {
			t.Fatalf("redacted bytes redacted again: %x -> %x", out, again)
		}
	})
}
