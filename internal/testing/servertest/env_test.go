package servertest_test

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/testing/certtest"
	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/internal/testing/testmain"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit)) }

func TestEnvBootstrap(t *testing.T) {
	e := servertest.NewEnv(t, servertest.Options{Refresh: time.Second})
	if e.Config.ServerListenerResourceNameTemplate != servertest.Template {
		t.Errorf("template %q, want %q", e.Config.ServerListenerResourceNameTemplate, servertest.Template)
	}
	if _, ok := e.Config.CertificateProviders[servertest.Provider]; !ok {
		t.Errorf("certificate providers %v, want %q", e.Config.CertificateProviders, servertest.Provider)
	}
	if got, want := servertest.ListenerName("127.0.0.1:8443"), "grpc/server?xds.resource.listening_address=127.0.0.1:8443"; got != want {
		t.Errorf("ListenerName = %q, want %q", got, want)
	}
	if host, port := servertest.HostPort(t, "[::1]:8443"); host != "::1" || port != 8443 {
		t.Errorf("HostPort = %q, %d; want ::1, 8443", host, port)
	}
}

// TestClientTLS checks ClientTLS, Dial and Call against a gRPC server that
// presents the Env's server certificate and asks for a client's.
func TestClientTLS(t *testing.T) {
	e := servertest.NewEnv(t, servertest.Options{})
	seen := make(chan string, 1)
	srv := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(&tls.Config{
			Certificates: []tls.Certificate{e.ServerLeaf().TLS},
			ClientCAs:    e.CA.Pool(),
			ClientAuth:   tls.VerifyClientCertIfGiven,
		})),
		grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
			p, _ := peer.FromContext(stream.Context())
			name := ""
			if info, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(info.State.PeerCertificates) > 0 {
				if uris := info.State.PeerCertificates[0].URIs; len(uris) > 0 {
					name = uris[0].String()
				}
			}
			seen <- name
			return status.Error(codes.Unimplemented, "nothing here")
		}),
	)
	lis := servertest.Listen(t)
	go srv.Serve(lis)
	defer srv.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name  string
		names *certtest.Names
		want  string
	}{
		{"no client certificate", nil, ""},
		{"client certificate", &certtest.Names{CommonName: "client", URIs: []string{servertest.ClientSPIFFE}}, servertest.ClientSPIFFE},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := servertest.Dial(t, lis.Addr().String(), grpc.WithTransportCredentials(e.ClientTLS(tc.names)))
			err := servertest.Call(ctx, conn, "/pkg.S/M", "x-k", "v")
			if status.Code(err) != codes.Unimplemented {
				t.Fatalf("Call: %v, want UNIMPLEMENTED from the server", err)
			}
			if got := <-seen; got != tc.want {
				t.Errorf("server saw client %q, want %q", got, tc.want)
			}
		})
	}
}
