package compare_test

import (
	"context"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/xdslens/xdslens/internal/testing/certtest"
	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/serverres"
)

// BenchmarkServerMTLS measures, in one run, xdslens's xDS-enabled server
// and grpc-go's under the same Listener: one chain under mTLS (a client
// certificate required) with an RBAC filter that allows the client's
// identity. handshake is a new connection (TCP, TLS 1.3 with client
// certificates) and its first EmptyCall; rpc is one EmptyCall on an open
// connection (1/ns is the throughput of one caller).
func BenchmarkServerMTLS(b *testing.B) {
	p := newServedPair(b, servertest.Options{})
	p.set(func(_ int, name, addr string) *listenerv3.Listener {
		host, port := servertest.HostPort(b, addr)
		rbac := serverres.RBAC("authz", rbacconfigv3.RBAC_ALLOW, map[string]*rbacconfigv3.Policy{
			"client": serverres.Policy(serverres.AnyPermission, serverres.PrincipalExact(servertest.ClientSPIFFE)),
		})
		return serverres.Listener(name, host, port, nil, serverres.Chain("mtls", nil,
			serverres.InlineHCM(serverres.Routes("r", serverres.Serve("/")), rbac),
			serverres.TLS(servertest.Provider, servertest.Provider, true)))
	})
	p.waitModes(b, "SERVING", xdstest.Timeout)
	creds := p.env.ClientTLS(&certtest.Names{URIs: []string{servertest.ClientSPIFFE}})
	ctx := context.Background()
	dial := func(b *testing.B, side int) *grpc.ClientConn {
		conn, err := grpc.NewClient("passthrough:///"+p.addrs[side], grpc.WithTransportCredentials(creds))
		if err != nil {
			b.Fatal(err)
		}
		return conn
	}
	call := func(b *testing.B, conn *grpc.ClientConn) {
		if err := conn.Invoke(ctx, emptyCall, &emptypb.Empty{}, &emptypb.Empty{}); err != nil {
			b.Fatal(err)
		}
	}
	for side, name := range sideNames {
		b.Run(name+"/handshake", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				conn := dial(b, side)
				call(b, conn)
				conn.Close()
			}
		})
		b.Run(name+"/rpc", func(b *testing.B) {
			conn := dial(b, side)
			defer conn.Close()
			call(b, conn)
			b.ReportAllocs()
			for b.Loop() {
				call(b, conn)
			}
		})
	}
}
