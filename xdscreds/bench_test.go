package xdscreds_test

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/xdslens/xdslens/internal/handshake"
	"github.com/xdslens/xdslens/internal/testing/certtest"
	"github.com/xdslens/xdslens/xdscreds"
)

// mtlsBench is an mTLS setup shared by the benchmarks: the cluster's
// settings for xdscreds, and grpc-go's TLS credentials with the same
// certificates, which check the server name instead of SAN matchers.
type mtlsBench struct {
	pki     *pki
	info    *handshake.Info
	grpcTLS credentials.TransportCredentials
}

func newMTLSBench(b *testing.B) *mtlsBench {
	b.Helper()
	p := newPKI(b, "bench-ca")
	store := newStore(b, time.Hour, map[string]*certtest.Files{"mesh": certtest.WriteFiles(b, p.client, p.ca)})
	return &mtlsBench{
		pki: p,
		info: info(b, store, &security.Config{IdentityInstance: "mesh", RootInstance: "mesh",
			SANMatchers: []matcher.String{exact("spiffe://example.org/ns/prod/sa/server")}}),
		grpcTLS: credentials.NewTLS(&tls.Config{
			RootCAs:      p.ca.Pool(),
			Certificates: []tls.Certificate{p.client.TLS},
			ServerName:   "server.example.com",
		}),
	}
}

// regexSANInfo returns m's settings with the SAN matchers of a mesh
// cluster that names its servers by pattern: a safe_regex that the
// server's SPIFFE ID matches, after matchers that match none of its SANs,
// so that every matcher is tried.
func (m *mtlsBench) regexSANInfo(b *testing.B) *handshake.Info {
	b.Helper()
	sc := *m.info.Settings.Security()
	sc.SANMatchers = []matcher.String{
		exact("spiffe://example.org/ns/dev/sa/server"),
		match(matcher.Suffix, ".dev.svc.cluster.local", false),
		match(matcher.Regex, `spiffe://example\.org/ns/(prod|staging)/sa/[a-z-]+`, false),
	}
	return info(b, m.info.Store, &sc)
}

// BenchmarkHandshake: one mutual TLS handshake on a new loopback
// connection, with xdscreds (key material from the provider, chain and
// SAN checks of its own; with an exact SAN matcher, and with a safe_regex
// one) and with grpc-go's TLS credentials, on the same certificates.
// grpc-go's xDS credentials need handshake information that only its own
// xDS channel can attach, so they are not measured here.
func BenchmarkHandshake(b *testing.B) {
	m := newMTLSBench(b)
	regex := m.regexSANInfo(b)
	srv := startTLS(b, backendConfig{cert: m.pki.server, clientCAs: m.pki.ca.Pool(), raw: true})
	ctx := context.Background()
	for _, c := range []struct {
		name string
		do   func(raw net.Conn) (net.Conn, error)
	}{
		{"xdscreds", func(raw net.Conn) (net.Conn, error) { return xdscreds.HandshakeWith(ctx, m.info, raw) }},
		{"xdscreds-regex-san", func(raw net.Conn) (net.Conn, error) { return xdscreds.HandshakeWith(ctx, regex, raw) }},
		{"grpc-go-tls", func(raw net.Conn) (net.Conn, error) {
			conn, _, err := m.grpcTLS.ClientHandshake(ctx, "server.example.com", raw)
			return conn, err
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				raw, err := net.Dial("tcp", srv.addr)
				if err != nil {
					b.Fatal(err)
				}
				conn, err := c.do(raw)
				if err != nil {
					b.Fatal(err)
				}
				conn.Close()
			}
		})
	}
}

// BenchmarkUnaryRPC: unary RPCs (a health check) on one established mTLS
// connection, as many at once as GOMAXPROCS, through a channel with
// xdscreds and through one with grpc-go's TLS credentials.
func BenchmarkUnaryRPC(b *testing.B) {
	m := newMTLSBench(b)
	srv := startTLS(b, backendConfig{cert: m.pki.server, clientCAs: m.pki.ca.Pool()})
	for _, c := range []struct {
		name string
		cc   *grpc.ClientConn
	}{
		{"xdscreds", dial(b, newCreds(b), srv.addr, m.info)},
		{"grpc-go-tls", dial(b, m.grpcTLS, srv.addr, nil)},
	} {
		b.Run(c.name, func(b *testing.B) {
			client := healthpb.NewHealthClient(c.cc)
			if err := check(b, c.cc); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
