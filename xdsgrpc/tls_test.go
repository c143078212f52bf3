package xdsgrpc_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// withUpstreamTLS returns c with a transport_socket asking for TLS with
// roots from the certificate provider instance "roots", and the SAN
// matchers sans.
func withUpstreamTLS(t *testing.T, c *clusterv3.Cluster, sans ...*matcherv3.StringMatcher) *clusterv3.Cluster {
	t.Helper()
	ctx := &tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
			CaCertificateProviderInstance: &tlsv3.CertificateProviderPluginInstance{InstanceName: "roots"},
			MatchSubjectAltNames:          sans,
		}},
	}}
	a, err := anypb.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.TransportSocket = &corev3.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: a}}
	return c
}

// TestTLSClusterFailsClosed checks that an RPC routed to a cluster whose
// transport_socket asks for TLS is never sent in plaintext: it fails
// UNAVAILABLE, wait-for-ready or not, naming the cluster and the TLS
// settings, and its backend gets nothing, while a plaintext cluster of the
// same route configuration serves.
func TestTLSClusterFailsClosed(t *testing.T) {
	t.Parallel()
	ctx := xdstest.Context(t)
	cp, err := controlplane.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	var bs [2]*backends.Backend
	for i := range bs {
		if bs[i], err = backends.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(bs[i].Stop)
	}
	boot := xdstest.Bootstrap{
		Servers:              []string{cp.Addr()},
		Node:                 fmt.Sprintf(`{"id": %q}`, rpctest.NodeID),
		CertificateProviders: `{"roots": {"plugin_name": "file_watcher", "config": {"ca_certificate_file": "/nonexistent/ca.pem"}}}`,
	}
	pool := xdsclient.NewPool(boot.Parse(t), xdstest.ClientOptions()...)
	if err := cp.SetResources(ctx, rpctest.NodeID, "1",
		controlplane.Listener("L", "R"),
		rpctest.RouteConfig("R",
			rpctest.Route(rpctest.PrefixMatch("/tls."), rpctest.ToCluster("secure")),
			rpctest.Route(rpctest.PrefixMatch(""), rpctest.ToCluster("plain"))),
		withUpstreamTLS(t, controlplane.Cluster("secure", "")),
		controlplane.Cluster("plain", ""),
		controlplane.Endpoints("secure", bs[0].Addr()),
		controlplane.Endpoints("plain", bs[1].Addr()),
	); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient("xdslens:///L", append(xdsgrpc.DialOptions(pool), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })

	if !rpctest.Poll(ctx, func(ctx context.Context) bool { return rpctest.Call(ctx, conn, "/plain.S/M").Err == nil }) {
		t.Fatal("the plaintext cluster never served")
	}
	for _, wfr := range []bool{false, true} {
		var opts []grpc.CallOption
		if wfr {
			opts = append(opts, grpc.WaitForReady(true))
		}
		err := conn.Invoke(ctx, "/tls.S/M", new(anypb.Any), new(anypb.Any), opts...)
		msg := status.Convert(err).Message()
		if status.Code(err) != codes.Unavailable || !strings.Contains(msg, `cluster "secure"`) || !strings.Contains(msg, "TLS") || !strings.Contains(msg, "not sent in plaintext") {
			t.Errorf("wait-for-ready %v: RPC to the TLS cluster: %v; want UNAVAILABLE naming the cluster and its TLS settings", wfr, err)
		}
	}
	if n := bs[0].Calls(); n != 0 {
		t.Errorf("the TLS cluster's backend got %d RPCs in plaintext, want 0", n)
	}
}
