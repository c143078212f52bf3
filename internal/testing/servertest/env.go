// Package servertest serves xDS-enabled servers in tests: a control plane
// with certificates made for the test and a bootstrap that names them
// (the resources come from package serverres).
package servertest

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/xdslens/xdslens/internal/testing/certtest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
)

// Names in the Env's bootstrap and certificates.
const (
	// NodeID is the bootstrap's node ID.
	NodeID = "server-test"
	// Template is the bootstrap's server_listener_resource_name_template.
	Template = "grpc/server?xds.resource.listening_address=%s"
	// Provider is the certificate provider instance that holds the
	// server's certificate and the CA's roots.
	Provider = "server-certs"
	// ServerDNS is the DNS SAN of the server's certificate.
	ServerDNS = "server.example.com"
	// ClientSPIFFE is the URI SAN of the client certificate Client
	// presents.
	ClientSPIFFE = "spiffe://example.org/ns/default/sa/client"
)

// Env is a control plane, a CA with a server certificate on disk, and a
// bootstrap naming both; everything it starts stops when the test ends.
type Env struct {
	T  testing.TB
	CP *controlplane.Server
	CA *certtest.CA
	// Files hold the server's certificate and key and the CA's roots: the
	// provider instance Provider reads them.
	Files *certtest.Files
	// Bootstrap is the bootstrap JSON; Config the same parsed.
	Bootstrap string
	Config    *bootstrap.Config

	version int
}

// Options change NewEnv's bootstrap.
type Options struct {
	// Features are the xDS server's server_features.
	Features []string
	// Refresh is the provider's refresh_interval (default 50ms).
	Refresh time.Duration
}

// NewEnv starts a control plane and writes the server's certificates.
func NewEnv(t testing.TB, o Options) *Env {
	t.Helper()
	ctx := xdstest.Context(t)
	cp, err := controlplane.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	if o.Refresh == 0 {
		o.Refresh = 50 * time.Millisecond
	}
	e := &Env{T: t, CP: cp, CA: certtest.NewCA(t, "server-test-ca")}
	e.Files = certtest.WriteFiles(t, e.ServerLeaf(), e.CA)
	e.Bootstrap = fmt.Sprintf(`{"xds_servers": [%s], "node": {"id": %q},
		"server_listener_resource_name_template": %q,
		"certificate_providers": {%q: {"plugin_name": "file_watcher", "config": %s}}}`,
		xdstest.ServerJSON(cp.Addr(), o.Features...), NodeID, Template, Provider, e.Files.FileWatcherJSON(o.Refresh))
	if e.Config, err = bootstrap.Parse([]byte(e.Bootstrap)); err != nil {
		t.Fatalf("bootstrap %s: %v", e.Bootstrap, err)
	}
	return e
}

// ServerLeaf issues a server certificate: DNS SAN ServerDNS, IP SAN
// 127.0.0.1.
func (e *Env) ServerLeaf() *certtest.Leaf {
	return e.CA.Issue(e.T, certtest.Names{CommonName: "server", DNS: []string{ServerDNS}, IPs: []string{"127.0.0.1"}})
}

// Pool makes a pool of the Env's bootstrap with opts after the test
// options of xdstest.ClientOptions.
func (e *Env) Pool(opts ...xdsclient.Option) *xdsclient.Pool {
	return xdsclient.NewPool(e.Config, xdstest.ClientOptions(opts...)...)
}

// Set serves resources as the next version of the configuration.
func (e *Env) Set(resources ...proto.Message) {
	e.T.Helper()
	e.version++
	if err := e.CP.SetResources(xdstest.Context(e.T), NodeID, strconv.Itoa(e.version), resources...); err != nil {
		e.T.Fatal(err)
	}
}

// Listen listens on 127.0.0.1 with a port the system chooses.
func Listen(t testing.TB) net.Listener {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return lis
}

// ListenerName is the Listener resource of a server listening on addr.
func ListenerName(addr string) string { return strings.ReplaceAll(Template, "%s", addr) }

// HostPort splits addr into the host and port of a Listener's address.
func HostPort(t testing.TB, addr string) (string, uint32) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	return host, uint32(p)
}

// ClientTLS returns TLS credentials that trust the Env's CA and, when
// names is not nil, present a client certificate with those names.
func (e *Env) ClientTLS(names *certtest.Names) credentials.TransportCredentials {
	cfg := &tls.Config{RootCAs: e.CA.Pool(), ServerName: ServerDNS}
	if names != nil {
		cfg.Certificates = []tls.Certificate{e.CA.Issue(e.T, *names).TLS}
	}
	return credentials.NewTLS(cfg)
}

// Dial returns a channel to addr, closed when the test ends.
func Dial(t testing.TB, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// Call makes one unary RPC of method (whose request and response are
// empty) with md as metadata pairs. Servers that do not implement the
// method answer UNIMPLEMENTED once routing and the filters let the RPC
// through.
func Call(ctx context.Context, conn *grpc.ClientConn, method string, md ...string) error {
	if len(md) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, md...)
	}
	return conn.Invoke(ctx, method, &emptypb.Empty{}, &emptypb.Empty{})
}
