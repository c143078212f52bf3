package xdscreds_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/xdslens/xdslens/internal/certstore"
	"github.com/xdslens/xdslens/internal/handshake"
	"github.com/xdslens/xdslens/internal/testing/certtest"
	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdscreds"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit)) }

// serverSANs are the names of the test servers' certificates.
var serverSANs = certtest.Names{
	CommonName: "server",
	DNS:        []string{"server.example.com", "*.wild.example.com"},
	URIs:       []string{"spiffe://example.org/ns/prod/sa/server"},
	IPs:        []string{"127.0.0.1"},
}

// pki is a CA with a server and a client certificate it signed.
type pki struct {
	ca             *certtest.CA
	server, client *certtest.Leaf
}

func newPKI(t testing.TB, name string) *pki {
	t.Helper()
	ca := certtest.NewCA(t, name)
	return &pki{
		ca:     ca,
		server: ca.Issue(t, serverSANs),
		client: ca.Issue(t, certtest.Names{CommonName: "client", URIs: []string{"spiffe://example.org/ns/prod/sa/client"}}),
	}
}

// rootsSetup returns a PKI, a store whose instance "roots" gives its CA,
// and a TLS backend showing its server certificate.
func rootsSetup(t testing.TB) (*pki, *certstore.Store, *backend) {
	t.Helper()
	p := newPKI(t, "ca")
	store := newStore(t, time.Hour, map[string]*certtest.Files{"roots": certtest.WriteFiles(t, nil, p.ca)})
	return p, store, startTLS(t, backendConfig{cert: p.server})
}

// newStore returns a certificate store whose bootstrap has a file_watcher
// instance per entry of instances, refreshed every refresh.
func newStore(t testing.TB, refresh time.Duration, instances map[string]*certtest.Files) *certstore.Store {
	t.Helper()
	var entries []string
	for name, f := range instances {
		entries = append(entries, fmt.Sprintf(`%q: {"plugin_name": "file_watcher", "config": %s}`, name, f.FileWatcherJSON(refresh)))
	}
	cfg, err := bootstrap.Parse([]byte(`{"xds_servers": [{"server_uri": "localhost:1", "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": "n"}, "certificate_providers": {` + strings.Join(entries, ", ") + `}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := certstore.New(cfg)
	t.Cleanup(s.Close)
	return s
}

// backend is a gRPC server on loopback with the health service, which
// records the TLS handshakes it completes.
type backend struct {
	addr string
	srv  *grpc.Server

	handshakes atomic.Int64
	mu         sync.Mutex
	serverName []string // the SNI of each ClientHello, "" for none
	clients    []string // the serial of each client certificate shown
}

// backendConfig is how a TLS backend serves.
type backendConfig struct {
	// cert is the certificate the server shows; getCert, when set, is
	// asked at each handshake instead.
	cert    *certtest.Leaf
	getCert func() *tls.Certificate
	// clientCAs, when set, are the roots of client certificates, which are
	// then required.
	clientCAs *x509.CertPool
	// raw makes a plain TLS server, not gRPC: it completes handshakes,
	// agreeing to "h2" unless noALPN, then waits for the client to close.
	raw, noALPN bool
}

// startTLS starts a TLS backend.
func startTLS(t testing.TB, bc backendConfig) *backend {
	t.Helper()
	b := &backend{}
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			b.mu.Lock()
			b.serverName = append(b.serverName, hello.ServerName)
			b.mu.Unlock()
			return nil, nil
		},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if bc.getCert != nil {
				return bc.getCert(), nil
			}
			return &bc.cert.TLS, nil
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			b.handshakes.Add(1)
			if len(cs.PeerCertificates) > 0 {
				b.mu.Lock()
				b.clients = append(b.clients, cs.PeerCertificates[0].SerialNumber.String())
				b.mu.Unlock()
			}
			return nil
		},
	}
	if bc.clientCAs != nil {
		cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, bc.clientCAs
	}
	if bc.raw {
		if !bc.noALPN {
			cfg.NextProtos = []string{"h2"}
		}
		b.serveRawTLS(t, cfg)
		return b
	}
	b.start(t, grpc.Creds(credentials.NewTLS(cfg)))
	return b
}

// startPlaintext starts a plaintext backend.
func startPlaintext(t testing.TB) *backend {
	t.Helper()
	b := &backend{}
	b.start(t, grpc.Creds(insecure.NewCredentials()))
	return b
}

func (b *backend) start(t testing.TB, opts ...grpc.ServerOption) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b.addr = lis.Addr().String()
	b.srv = grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(b.srv, health.NewServer())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.srv.Serve(lis)
	}()
	t.Cleanup(func() {
		b.srv.Stop()
		<-done
	})
}

// serveRawTLS accepts connections and completes TLS handshakes on them,
// then closes them.
func (b *backend) serveRawTLS(t testing.TB, cfg *tls.Config) {
	t.Helper()
	lis, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.addr = lis.Addr().String()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				if c.(*tls.Conn).Handshake() == nil {
					c.Read(make([]byte, 1)) // until the client closes
				}
			}()
		}
	}()
	t.Cleanup(func() {
		lis.Close()
		wg.Wait()
	})
}

// serverNames returns the SNI of every ClientHello so far.
func (b *backend) serverNames() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.serverName...)
}

// clientSerials returns the serial of every client certificate so far.
func (b *backend) clientSerials() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.clients...)
}

// info returns the handshake Info of an endpoint of cluster "secure"
// with the settings sc, compiled as the cluster policy compiles them; with
// a nil sc, an Info without settings.
func info(t testing.TB, store *certstore.Store, sc *security.Config) *handshake.Info {
	t.Helper()
	if sc == nil {
		return &handshake.Info{Cluster: "secure", Store: store}
	}
	s, err := handshake.NewSettings(sc)
	if err != nil {
		t.Fatal(err)
	}
	return &handshake.Info{Cluster: "secure", Settings: s, Store: store}
}

// newCreds returns xDS credentials whose fallback is insecure.
func newCreds(t testing.TB) credentials.TransportCredentials {
	t.Helper()
	creds, err := xdscreds.NewClientCredentials(xdscreds.ClientOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		t.Fatal(err)
	}
	return creds
}

// dial returns a channel with creds to the address addr, which carries
// info unless it is nil, as the xdslens cluster policy sets it.
func dial(t testing.TB, creds credentials.TransportCredentials, addr string, info *handshake.Info, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	a := resolver.Address{Addr: addr}
	if info != nil {
		a = handshake.Set(a, info)
	}
	r := manual.NewBuilderWithScheme("xdscredstest")
	r.InitialState(resolver.State{Addresses: []resolver.Address{a}})
	cc, err := grpc.NewClient(r.Scheme()+":///secure", append([]grpc.DialOption{grpc.WithResolvers(r), grpc.WithTransportCredentials(creds)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// check makes one health check on cc, which fails at once when the
// channel cannot connect.
func check(t testing.TB, cc *grpc.ClientConn) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

// tlsPair parses a PEM certificate and key into a certificate getter.
func tlsPair(pemData []byte) (func() *tls.Certificate, error) {
	c, err := tls.X509KeyPair(pemData, pemData)
	if err != nil {
		return nil, err
	}
	return func() *tls.Certificate { return &c }, nil
}
