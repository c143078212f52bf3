package demo

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	streamv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/rbac/audit_loggers/stream/v3"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/certs"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/serverres"
)

// Names of the demo's xDS-enabled server.
const (
	// certsInstance is the certificate provider instance of the demo
	// bootstrap: the server's certificate and the demo CA's roots.
	certsInstance = "demo-certs"
	// ServerName is the DNS SAN of the server's certificate.
	ServerName = "xdswatch.demo"
	// ClientID is the identity (URI SAN) of the demo's client
	// certificate, the one RBAC lets call TestService's EmptyCall.
	ClientID = "spiffe://xdswatch.demo/ns/demo/sa/client"
	// authzFilter is the name of the RBAC filter.
	authzFilter = "demo-authz"
	// AllowedMethod and DeniedMethod are the TestService methods
	// RBAC allows to the demo client, and denies.
	AllowedMethod = "/grpc.testing.TestService/EmptyCall"
	DeniedMethod  = "/grpc.testing.TestService/UnaryCall"
)

// demoCerts are the certificates the demo makes at start, in a temporary
// directory: the server's, which the certificate provider reads, and a
// client's, for mTLS to the demo's xDS-enabled server.
type demoCerts struct {
	dir   string
	files *certs.Files
	// clientCert and clientKey are the client's files; clientTLS the
	// client's TLS config.
	clientCert, clientKey string
	clientTLS             *tls.Config
}

// makeDemoCerts makes a CA, a server and a client certificate, and
// writes them in a new temporary directory.
func makeDemoCerts() (*demoCerts, error) {
	ca, err := certs.GenerateCA("xdswatch demo CA")
	if err != nil {
		return nil, err
	}
	server, err := ca.Generate(certs.Names{CommonName: "xdswatch demo server", DNS: []string{ServerName}, IPs: []string{"127.0.0.1"}})
	if err != nil {
		return nil, err
	}
	client, err := ca.Generate(certs.Names{CommonName: "xdswatch demo client", URIs: []string{ClientID}})
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "xdswatch-demo-certs")
	if err != nil {
		return nil, err
	}
	c := &demoCerts{dir: dir, clientCert: filepath.Join(dir, "client.pem"), clientKey: filepath.Join(dir, "client-key.pem")}
	c.clientTLS = &tls.Config{Certificates: []tls.Certificate{client.TLS}, RootCAs: ca.Pool(), ServerName: ServerName}
	if c.files, err = certs.WriteFilesIn(dir, server, ca); err == nil {
		if err = os.WriteFile(c.clientCert, client.CertPEM, 0o600); err == nil {
			err = os.WriteFile(c.clientKey, client.KeyPEM, 0o600)
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

// remove deletes the certificates.
func (c *demoCerts) remove() { os.RemoveAll(c.dir) }

// providersJSON is the bootstrap's certificate_providers: one file_watcher
// instance reading the server's files.
func (c *demoCerts) providersJSON() json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{%q: {"plugin_name": "file_watcher", "config": %s}}`, certsInstance, c.files.FileWatcherJSON(time.Minute)))
}

// serverListener is the Listener of the demo's xDS-enabled server on
// addr: one filter chain under mTLS (the identity and the client roots of
// certsInstance, a client certificate required) whose routes serve
// every method, and whose RBAC filter allows the health service to every
// client with a certificate, TestService's EmptyCall to ClientID alone,
// and denies the rest, each denial audited by the stdout logger.
func serverListener(addr string) *listenerv3.Listener {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	authenticated := &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_Authenticated_{Authenticated: &rbacconfigv3.Principal_Authenticated{}}}
	rules := &rbacv3.RBAC{Rules: &rbacconfigv3.RBAC{
		Action: rbacconfigv3.RBAC_ALLOW,
		Policies: map[string]*rbacconfigv3.Policy{
			"health-checks":   serverres.Policy(serverres.PathPrefix("/grpc.health.v1.Health/"), authenticated),
			"demo-empty-call": serverres.Policy(serverres.PathPrefix(AllowedMethod), serverres.PrincipalExact(ClientID)),
		},
		AuditLoggingOptions: &rbacconfigv3.RBAC_AuditLoggingOptions{
			AuditCondition: rbacconfigv3.RBAC_AuditLoggingOptions_ON_DENY,
			LoggerConfigs: []*rbacconfigv3.RBAC_AuditLoggingOptions_AuditLoggerConfig{{AuditLogger: &corev3.TypedExtensionConfig{
				Name:        "stdout",
				TypedConfig: serverres.MustAny(&streamv3.StdoutAuditLog{}),
			}}},
		},
	}}
	hcm := serverres.InlineHCM(serverres.Routes("demo-server-routes", serverres.Serve("/")), serverres.Filter(authzFilter, rules))
	chain := serverres.Chain("demo-mtls", nil, hcm, serverres.TLS(certsInstance, certsInstance, true))
	return serverres.Listener(fmt.Sprintf(serverTemplate, addr), host, uint32(p), nil, chain)
}
