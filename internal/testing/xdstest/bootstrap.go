package xdstest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/bootstrap"
)

// Bootstrap is a bootstrap configuration for a client of servers on
// loopback, such as [ADSServer]s, reached with insecure credentials.
type Bootstrap struct {
	// Servers are the addresses of the top-level xds_servers, in priority
	// order.
	Servers []string
	// Features are the server_features of each of Servers; none if empty.
	Features []string
	// Node is the node object, as JSON such as {"id": "n"}; the
	// configuration has no node if it is empty.
	Node string
	// Authorities is the authorities object, as JSON; the configuration
	// has none if it is empty.
	Authorities string
	// CertificateProviders is the certificate_providers object, as JSON;
	// the configuration has none if it is empty.
	CertificateProviders string
}

// JSON returns the configuration as JSON.
func (b Bootstrap) JSON() string {
	js := `{"xds_servers": ` + serversJSON(b.Servers, b.Features)
	if b.Node != "" {
		js += `, "node": ` + b.Node
	}
	if b.Authorities != "" {
		js += `, "authorities": ` + b.Authorities
	}
	if b.CertificateProviders != "" {
		js += `, "certificate_providers": ` + b.CertificateProviders
	}
	return js + "}"
}

// Parse returns the configuration as the client reads it, and fails t if it
// does not read it.
func (b Bootstrap) Parse(t testing.TB) *bootstrap.Config {
	t.Helper()
	js := b.JSON()
	cfg, err := bootstrap.Parse([]byte(js))
	if err != nil {
		t.Fatalf("bootstrap %s: %v", js, err)
	}
	return cfg
}

// ServerJSON returns one entry of an xds_servers list: the server at addr,
// reached with insecure credentials, with features as its server_features
// if there are any.
func ServerJSON(addr string, features ...string) string {
	fs := ""
	if len(features) > 0 {
		fs = `, "server_features": ["` + strings.Join(features, `", "`) + `"]`
	}
	return fmt.Sprintf(`{"server_uri": %q, "channel_creds": [{"type": "insecure"}]%s}`, addr, fs)
}

// ServersJSON returns an xds_servers list, such as an authority's, of the
// servers at addrs in priority order, each as [ServerJSON] gives it with no
// features.
func ServersJSON(addrs ...string) string { return serversJSON(addrs, nil) }

func serversJSON(addrs, features []string) string {
	entries := make([]string, len(addrs))
	for i, a := range addrs {
		entries[i] = ServerJSON(a, features...)
	}
	return "[" + strings.Join(entries, ", ") + "]"
}
