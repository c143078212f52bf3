package compare_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	grpcxdscreds "google.golang.org/grpc/credentials/xds"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/xds"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/testing/certtest"
	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
)

// tlsBackend is a gRPC server with TestService over TLS (or mTLS, when
// clientCAs is set); it answers EmptyCall.
type tlsBackend struct {
	testgrpc.UnimplementedTestServiceServer
	addr string
}

func (tlsBackend) EmptyCall(context.Context, *testgrpc.Empty) (*testgrpc.Empty, error) {
	return &testgrpc.Empty{}, nil
}

func startServer(t *testing.T, creds credentials.TransportCredentials) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var opts []grpc.ServerOption
	if creds != nil {
		opts = append(opts, grpc.Creds(creds))
	}
	srv := grpc.NewServer(opts...)
	testgrpc.RegisterTestServiceServer(srv, tlsBackend{})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// upstreamTLS is a transport_socket with roots from the provider instance
// "roots" and, if identity, the client certificate from "identity", with
// the SAN matchers sans.
func upstreamTLS(t *testing.T, identity bool, sans ...*matcherv3.StringMatcher) *corev3.TransportSocket {
	t.Helper()
	vc := &tlsv3.CertificateValidationContext{CaCertificateProviderInstance: &tlsv3.CertificateProviderPluginInstance{InstanceName: "roots"}, MatchSubjectAltNames: sans}
	common := &tlsv3.CommonTlsContext{ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: vc}}
	if identity {
		common.TlsCertificateProviderInstance = &tlsv3.CertificateProviderPluginInstance{InstanceName: "identity"}
	}
	a, err := anypb.New(&tlsv3.UpstreamTlsContext{CommonTlsContext: common})
	if err != nil {
		t.Fatal(err)
	}
	return &corev3.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: a}}
}

// exactSAN is a SAN matcher of the name san.
func exactSAN(san string) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: san}}
}

// TestSideBySideTLSAndSANs routes by path to clusters that ask for TLS,
// mutual TLS, a SAN the backend does not have, TLS to a plaintext
// backend, and plaintext: xdslens's channel with xdscreds and grpc-go's
// with its xDS credentials reach the same backends and fail the same
// RPCs; but for a SAN matcher with an empty prefix, which only xdslens
// accepts.
func TestSideBySideTLSAndSANs(t *testing.T) {
	ctx := xdstest.Context(t)
	ca := certtest.NewCA(t, "compare-ca")
	server := ca.Issue(t, certtest.Names{CommonName: "backend", DNS: []string{"backend.example"}, IPs: []string{"127.0.0.1"}})
	client := ca.Issue(t, certtest.Names{CommonName: "client", URIs: []string{"spiffe://compare/client"}})
	roots := certtest.WriteFiles(t, nil, ca)
	identity := certtest.WriteFiles(t, client, nil)

	tlsAddr := startServer(t, credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{server.TLS}}))
	mtlsAddr := startServer(t, credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{server.TLS}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()}))
	plainAddr := startServer(t, nil)
	plain2Addr := startServer(t, nil)

	cp, err := controlplane.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	boot := xdstest.Bootstrap{
		Servers: []string{cp.Addr()},
		Node:    fmt.Sprintf(`{"id": %q}`, rpctest.NodeID),
		CertificateProviders: fmt.Sprintf(`{"roots": {"plugin_name": "file_watcher", "config": %s}, "identity": {"plugin_name": "file_watcher", "config": %s}}`,
			roots.FileWatcherJSON(time.Second), identity.FileWatcherJSON(time.Second)),
	}
	withTLS := func(name string, ts *corev3.TransportSocket) *clusterv3.Cluster {
		c := controlplane.Cluster(name, "")
		c.TransportSocket = ts
		return c
	}
	route := func(path, cluster string) *routev3.Route {
		return rpctest.Route(rpctest.PathMatch(path), rpctest.ToCluster(cluster))
	}
	if err := cp.SetResources(ctx, rpctest.NodeID, "1",
		controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route",
			route("/grpc.testing.TestService/EmptyCall", "tls"),
			route("/grpc.testing.TestService/UnaryCall", "mtls"),
			route("/grpc.testing.TestService/StreamingOutputCall", "wrongsan"),
			route("/grpc.testing.TestService/StreamingInputCall", "tlstoplain"),
			route("/pkg.Svc/Plain", "plain"),
			route("/pkg.Svc/AnySAN", "anysan")),
		withTLS("tls", upstreamTLS(t, false, exactSAN("backend.example"))), controlplane.Endpoints("tls", tlsAddr),
		withTLS("mtls", upstreamTLS(t, true)), controlplane.Endpoints("mtls", mtlsAddr),
		withTLS("wrongsan", upstreamTLS(t, false, exactSAN("other.example"))), controlplane.Endpoints("wrongsan", tlsAddr),
		withTLS("tlstoplain", upstreamTLS(t, false)), controlplane.Endpoints("tlstoplain", plainAddr),
		withTLS("anysan", upstreamTLS(t, false, &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{}})), controlplane.Endpoints("anysan", tlsAddr),
		controlplane.Cluster("plain", ""), controlplane.Endpoints("plain", plain2Addr),
	); err != nil {
		t.Fatal(err)
	}

	oursConn := rpctest.DialTLS(t, xdsclient.NewPool(boot.Parse(t), xdstest.ClientOptions()...), "xdslens:///svc")
	theirs, err := grpcxdscreds.NewClientCredentials(grpcxdscreds.ClientOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := xds.NewXDSResolverWithConfigForTesting([]byte(boot.JSON()))
	if err != nil {
		t.Fatal(err)
	}
	theirsConn, err := grpc.NewClient("xds:///svc", grpc.WithResolvers(rb), grpc.WithTransportCredentials(theirs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { theirsConn.Close() })

	for _, tc := range []struct {
		method string
		ok     bool
	}{
		{"/grpc.testing.TestService/EmptyCall", true},            // TLS, SAN matches
		{"/grpc.testing.TestService/UnaryCall", true},            // mTLS
		{"/grpc.testing.TestService/StreamingOutputCall", false}, // SAN mismatch
		{"/grpc.testing.TestService/StreamingInputCall", false},  // TLS to a plaintext backend
		{"/pkg.Svc/Plain", true},                                 // plaintext cluster
	} {
		for name, conn := range map[string]*grpc.ClientConn{"xdslens": oursConn, "grpc-go": theirsConn} {
			if tc.ok {
				var o rpctest.Outcome
				if !rpctest.Poll(ctx, func(ctx context.Context) bool {
					o = rpctest.Call(ctx, conn, tc.method)
					return o.Err == nil
				}) {
					t.Errorf("%s %s: never reached the backend: %v", name, tc.method, o.Err)
				}
				continue
			}
			c, cancel := context.WithTimeout(ctx, time.Second)
			o := rpctest.Call(c, conn, tc.method)
			cancel()
			if o.Err == nil {
				t.Errorf("%s %s: reached %q, want the handshake to fail", name, tc.method, o.Backend)
			}
		}
	}

	// A deliberate difference: a SAN matcher with an empty prefix. gRPC
	// C-core accepts it (StringMatcherParse, StringMatcher::Create), and
	// it matches every SAN; xdslens does as C-core. grpc-go rejects the
	// cluster, and fails its RPCs.
	if !rpctest.Poll(xdstest.Context(t), func(ctx context.Context) bool { return rpctest.Call(ctx, oursConn, "/pkg.Svc/AnySAN").Err == nil }) {
		t.Error("xdslens /pkg.Svc/AnySAN: never reached the backend through a SAN matcher with an empty prefix")
	}
	const rejected = "empty prefix is not allowed"
	var o rpctest.Outcome
	if !rpctest.Poll(xdstest.Context(t), func(ctx context.Context) bool {
		o = rpctest.Call(ctx, theirsConn, "/pkg.Svc/AnySAN")
		return o.Err != nil && strings.Contains(o.Err.Error(), rejected)
	}) {
		t.Errorf("grpc-go /pkg.Svc/AnySAN: %v (backend %q), want an error saying %q (if grpc-go now accepts an empty prefix, this difference is gone)", o.Err, o.Backend, rejected)
	}
}
